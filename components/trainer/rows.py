"""Recorded calls to training rows: the prefix merge DESIGN.md describes.

An agent's calls usually re-send the whole conversation, so call n+1's prompt is call
n's prompt plus its completion plus new context (tool output, the harness's next
message). Such a call extends the current row: its new context tokens go in with
response_mask 0 and logprob 0.0 (the policy did not sample them), its completion with
mask 1 and the logprobs the engine reported. A call whose prompt does not extend the
row (the harness rewrote or trimmed its history) starts a new row; those breaks are
counted, because each one costs a re-encoded prompt and hides a context rewrite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from components.core.trajectory import RecordedCall, latest_attempt


class BatchError(ValueError):
    """Recorded data that cannot become a training batch; the message names the rollout and call."""


class TemperatureMismatchError(BatchError):
    """Calls sampled at a temperature other than the one training assumes."""


@dataclass
class Row:
    """One training sequence: a prompt, then sampled and context tokens in the response part."""

    rollout_id: str
    prompt: list[int]
    response: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def tokens(self) -> list[int]:
        return self.prompt + self.response

    def add(self, token_ids: Sequence[int], sampled: bool, logprobs: Sequence[float] | None = None) -> None:
        self.response.extend(token_ids)
        self.response_mask.extend([1 if sampled else 0] * len(token_ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(token_ids))


@dataclass
class MergeCounts:
    continuations: int = 0  # calls appended to the row before them
    breaks: int = 0  # calls that had to start a new row after the first
    superseded: int = 0  # calls a later retry replaced (the harness never saw their answer)


def check_temperature(rollout_id: str, call: RecordedCall, expected: float) -> None:
    """Refuse logprobs sampled at another temperature: the ratio to the policy would be wrong."""
    used = call.sampling.temperature
    if used is None or not math.isclose(used, expected, rel_tol=1e-6):
        shown = "no recorded temperature" if used is None else f"temperature {used}"
        raise TemperatureMismatchError(
            f"rollout {rollout_id} call {call.call_index} was sampled with {shown}, but "
            f"algorithm.temperature is {expected}: run the proxy with --training (it samples at the "
            f"training temperature) or set algorithm.temperature to {used}"
        )


def _trainable(calls: Sequence[RecordedCall], counts: MergeCounts) -> list[RecordedCall]:
    # Earlier attempts of a retried rollout ended on an infrastructure failure: kept in the
    # file, never trained on (their conversation was abandoned, not continued).
    calls = latest_attempt(calls)
    replaced = {call.tags["retry_of"] for call in calls if isinstance(call.tags.get("retry_of"), int)}
    kept = []
    for call in calls:
        if call.tags.get("side_call") or not call.ok:
            continue
        if call.call_index in replaced or "superseded_by" in call.tags:
            counts.superseded += 1
            continue
        kept.append(call)
    return kept


def merge_calls(rollout_id: str, calls: Sequence[RecordedCall], temperature: float) -> tuple[list[Row], MergeCounts]:
    """Merge one rollout's calls (in call order) into rows; side calls and failed calls are skipped."""
    counts = MergeCounts()
    rows: list[Row] = []
    for call in _trainable(sorted(calls, key=lambda c: c.call_index), counts):
        check_temperature(rollout_id, call, temperature)
        if len(call.completion_logprobs) != len(call.completion_token_ids) or not call.prompt_token_ids:
            raise BatchError(
                f"rollout {rollout_id} call {call.call_index} lacks prompt token ids or completion logprobs; "
                "scoring should have marked the rollout unusable (rescore it)"
            )
        current = rows[-1].tokens() if rows else None
        if current is not None and call.prompt_token_ids[: len(current)] == current:
            rows[-1].add(call.prompt_token_ids[len(current) :], sampled=False)
            counts.continuations += 1
        else:
            if current is not None:
                counts.breaks += 1
            rows.append(Row(rollout_id=rollout_id, prompt=list(call.prompt_token_ids)))
        rows[-1].add(call.completion_token_ids, sampled=True, logprobs=call.completion_logprobs)
    return rows, counts


def fit_row(row: Row, max_prompt_tokens: int, max_response_tokens: int) -> tuple[Row | None, bool]:
    """(row cut to the limits or None when its prompt is too long, whether it was truncated).

    Prompts are never truncated: a cut prompt is a context the policy never saw. A
    truncated response loses its trailing context tokens too, so the row still ends on
    a sampled token, where the reward goes.
    """
    if len(row.prompt) > max_prompt_tokens:
        return None, False
    if len(row.response) <= max_response_tokens:
        return row, False
    end = max_response_tokens
    while end > 0 and row.response_mask[end - 1] == 0:
        end -= 1
    cut = Row(row.rollout_id, row.prompt, row.response[:end], row.response_mask[:end], row.logprobs[:end])
    return cut, True
