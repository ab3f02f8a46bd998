"""Recorded calls to training rows: the prefix merge docs/trainer.md describes ("The batch").

An agent's calls usually re-send the whole conversation, so call n+1's prompt is call
n's prompt plus its completion plus new context (tool output, the harness's next
message). Such a call extends the row that ends with call n, whichever row that is (a
subagent's calls interleave with its parent's): its new context tokens go in with
response_mask 0 and logprob 0.0 (the policy did not sample them), its completion with
mask 1 and the logprobs the engine reported. A call whose prompt extends no row starts
a branch, a row of its own tagged with its parent call and kind (branches.py: a
subagent, a rewritten history, or a counted break). Every row of a rollout trains with
the rollout's advantage; each sampled token lands in exactly one row.

A merged row longer than the training limits is split at call boundaries (``split_row``):
each piece starts with its first call's full prompt, which the engine accepted, so a
piece fits wherever the call did; every sampled token lands in exactly one piece.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from components.core.trajectory import RecordedCall, latest_attempt
from components.trainer.branches import BRANCH_KINDS, BREAK, Lineage


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
    # (start, end) of each call's completion in ``response``: where the row may be split.
    completions: list[tuple[int, int]] = field(default_factory=list)
    branch_kind: str | None = None  # None for the rollout's first row; else branches.SUBAGENT, REWRITE or BREAK
    parent_call: int | None = None  # call_index the branch grew from (None: first row, or nothing shared)
    calls: list[int] = field(default_factory=list)  # call_index of each completion; the last call's prompt holds the row's images

    def tokens(self) -> list[int]:
        return self.prompt + self.response

    def size(self) -> int:
        return len(self.prompt) + len(self.response)

    def starts(self, token_ids: Sequence[int]) -> bool:
        """Whether ``token_ids`` begin with this row's tokens (a call whose prompt can continue it)."""
        cut = len(self.prompt)
        if len(token_ids) < self.size():
            return False
        return list(token_ids[:cut]) == self.prompt and list(token_ids[cut : self.size()]) == self.response

    def add(
        self,
        token_ids: Sequence[int],
        sampled: bool,
        logprobs: Sequence[float] | None = None,
        call_index: int = -1,
        mask: Sequence[int] | None = None,
    ) -> None:
        """Append context (``sampled`` False: mask 0) or a completion (``sampled``: mask 1, or
        ``mask`` where the engine forced some of its tokens)."""
        if sampled:
            self.completions.append((len(self.response), len(self.response) + len(token_ids)))
            self.calls.append(call_index)
        self.response.extend(token_ids)
        self.response_mask.extend(mask if sampled and mask is not None else [1 if sampled else 0] * len(token_ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(token_ids))

    def sampled_tokens(self) -> int:
        return sum(self.response_mask)

    def forced_tokens(self) -> int:
        """Completion tokens the engine forced: in the row as context the policy did not choose."""
        return sum(end - start - sum(self.response_mask[start:end]) for start, end in self.completions)


@dataclass
class MergeCounts:
    continuations: int = 0  # calls appended to a row their prompt extends
    branches: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BRANCH_KINDS, 0))  # by kind
    breaks: int = 0  # calls that started a row neither continuing one nor a known branch
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


def trainable_calls(calls: Sequence[RecordedCall], counts: MergeCounts | None = None) -> list[RecordedCall]:
    """The calls training learns from: the latest attempt's answered turns, less side calls
    and retried calls (``counts`` counts the retried ones)."""
    counts = counts if counts is not None else MergeCounts()
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

    def check(call: RecordedCall) -> None:
        check_temperature(rollout_id, call, temperature)
        if len(call.completion_logprobs) != len(call.completion_token_ids) or not call.prompt_token_ids:
            raise BatchError(
                f"rollout {rollout_id} call {call.call_index} lacks prompt token ids or completion logprobs; "
                "scoring should have marked the rollout unusable (rescore it)"
            )

    return _merge(rollout_id, calls, check)


def imitation_rows(rollout_id: str, calls: Sequence[RecordedCall]) -> tuple[list[Row], MergeCounts]:
    """The rows supervised fine-tuning learns from: the same merge and masks as RL rows, except
    that every completion token is a target, forced ones included (a scripted teacher's turn
    is what the student imitates), and any sampling temperature is accepted."""

    def check(call: RecordedCall) -> None:
        if not call.prompt_token_ids:
            raise BatchError(f"rollout {rollout_id} call {call.call_index} lacks prompt token ids; it cannot be imitated")

    return _merge(rollout_id, calls, check, honour_forced=False)


def place_calls(calls: Sequence[RecordedCall]) -> list[Row]:
    """The rows the merge builds from these calls, without training's checks: where each call
    goes (``Row.calls``) and why a row branched, for a reader (the viewer) of any recording."""
    return _merge("", [call for call in calls if call.prompt_token_ids], None)[0]


def _merge(
    rollout_id: str,
    calls: Sequence[RecordedCall],
    check: Callable[[RecordedCall], None] | None,
    honour_forced: bool = True,
) -> tuple[list[Row], MergeCounts]:
    counts = MergeCounts()
    rows: list[Row] = []
    lineage = Lineage()
    for call in trainable_calls(sorted(calls, key=lambda c: c.call_index), counts):
        if check is not None:
            check(call)
        extended = [row for row in rows if row.starts(call.prompt_token_ids)]
        if extended:
            row = max(extended, key=Row.size)
            row.add(call.prompt_token_ids[row.size() :], sampled=False)
            counts.continuations += 1
        else:
            row = Row(rollout_id=rollout_id, prompt=list(call.prompt_token_ids))
            if rows:
                branch = lineage.classify(call)
                row.branch_kind, row.parent_call = branch.kind, branch.parent_call
                if branch.kind == BREAK:
                    counts.breaks += 1
                else:
                    counts.branches[branch.kind] += 1
            rows.append(row)
        mask = None if call.forced_from is None or not honour_forced else call.sampled_mask()
        row.add(call.completion_token_ids, sampled=True, logprobs=call.completion_logprobs, call_index=call.call_index, mask=mask)
        lineage.add(call)
    return rows, counts


# Why a call is dropped from training (batch/dropped/<reason>); the only loss splitting allows.
PROMPT_TOO_LONG = "prompt_too_long"
COMPLETION_TOO_LONG = "completion_too_long"


@dataclass
class SplitCounts:
    splits: int = 0  # rows added by splitting: a row cut into three counts two
    dropped: dict[str, int] = field(default_factory=dict)  # calls left out, by reason

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def _piece(row: Row, first: int, last: int) -> Row:
    """Calls ``first..last`` of ``row`` as a row: the first call's prompt, then the rest as response."""
    start, end = row.completions[first][0], row.completions[last][1]
    spans = [(a - start, b - start) for a, b in row.completions[first : last + 1]]
    return Row(
        row.rollout_id,
        row.tokens()[: len(row.prompt) + start],
        row.response[start:end],
        row.response_mask[start:end],
        row.logprobs[start:end],
        spans,
        row.branch_kind,
        row.parent_call,
        row.calls[first : last + 1],
    )


def split_row(row: Row, max_prompt_tokens: int, max_response_tokens: int) -> tuple[list[Row], SplitCounts]:
    """``row`` as rows within the limits, cut only between calls; a call that fits alone is never lost.

    Context tokens after a piece's last completion move to the next piece's prompt (they
    were never trained on), so each piece ends on a completion (the reward goes on its last
    sampled token).
    A call is dropped only when it cannot start a row: its own prompt or completion is
    over the limit.
    """
    counts = SplitCounts()
    pieces: list[Row] = []
    first = None  # index of the call that starts the current piece
    for index, (start, end) in enumerate(row.completions):
        if first is not None and end - row.completions[first][0] <= max_response_tokens:
            continue  # the call extends the current piece
        if first is not None:
            pieces.append(_piece(row, first, index - 1))
            first = None
        if len(row.prompt) + start > max_prompt_tokens:
            counts.drop(PROMPT_TOO_LONG)
        elif end - start > max_response_tokens:
            counts.drop(COMPLETION_TOO_LONG)
        else:
            first = index
    if first is not None:
        pieces.append(_piece(row, first, len(row.completions) - 1))
    pieces = [p for p in pieces if p.sampled_tokens()]  # empty completions: nothing to train
    counts.splits = max(len(pieces) - 1, 0)
    return pieces, counts
