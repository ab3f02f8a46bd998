"""What stops a train step before it trains on too little, or on nothing at all.

Both stops are errors whose messages give the counts per reason and the fix: an
iteration that silently commits an unchanged checkpoint looks, from its metrics, like
one that trained and learned nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from components.core.outcome import RewardRecord
from components.trainer.batch import BatchStats
from components.trainer.cpu_update import UpdateError
from components.trainer.rows import COMPLETION_TOO_LONG, PROMPT_TOO_LONG

# What to do about each reason code scoring gives (components/reward/scoring.py).
_FIXES = {
    "infra_error": "check the engine and proxy logs (outcome extra.failed_attempts); raise rollout.infra_retries",
    "verifier_error": "fix the task's verifier (outcome verifier_output)",
    "group_no_baseline": "fix the reasons that masked the rest of those groups",
    "token_text_mismatch": "the recorded token ids disagree with the text: check the proxy and engine versions",
}
_CAPTURE_FIX = "make sure the harness calls the recording proxy and the engine returns token ids and logprobs"
_EQUAL_FIX = (
    "make rewards differ within a group: partial credit in the verifiers, more samples per task "
    "(rollout.samples_per_task), or tasks nearer the policy's ability"
)
_LENGTH_FIXES = {
    PROMPT_TOO_LONG: "raise algorithm.max_prompt_tokens, or unset it to follow engine.max_model_len",
    COMPLETION_TOO_LONG: "raise algorithm.max_response_tokens, or unset it to follow engine.max_model_len",
}


def _tally(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{code} x{count}" for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _unusable_fixes(reasons: Mapping[str, int]) -> list[str]:
    return sorted({f"{code}: {_FIXES.get(code, _CAPTURE_FIX)}" for code in reasons})


def check_usable(records: list[RewardRecord], min_fraction: float, origin: str, reasons: Mapping[str, int]) -> None:
    """Stop when fewer rollouts than ``rollout.min_usable_fraction`` are usable."""
    if not records:
        raise UpdateError(f"{origin} holds no reward records; did every rollout fail to start?")
    usable = sum(r.usable for r in records)
    if usable / len(records) < min_fraction:
        if not reasons:  # a rewards.json from before reason codes: the statuses are the best summary
            reasons = Counter(r.status.value for r in records if not r.usable)
        fixes = "; ".join(_unusable_fixes(reasons))
        raise UpdateError(
            f"only {usable} of {len(records)} rollouts ({usable / len(records):.0%}) are usable, below "
            f"rollout.min_usable_fraction {min_fraction:g}; unusable because: {_tally(reasons) or 'unknown'} "
            f"(each rollout's reason: 'unusable' in {origin}). Fix: {fixes or 'see the reasons'}; then rerun "
            "the iteration, or lower rollout.min_usable_fraction to train on what is left"
        )


def check_trainable(stats: BatchStats, reasons: Mapping[str, int], iteration: int, allow_empty: bool) -> bool:
    """Whether the batch has a sampled token to train on; without one, stop unless ``allow_empty``.

    ``reasons`` are the score step's unusable counts by code (rewards.json).
    """
    if stats.trained_tokens:
        return True
    if allow_empty:
        return False
    causes, fixes = [], []
    if stats.skipped_groups:
        causes.append(f"{stats.skipped_groups} group(s) skipped because every reward was equal (batch/skipped_groups)")
        fixes.append(_EQUAL_FIX)
    if stats.dropped_rows:
        causes.append(f"{stats.dropped_rows} call(s) dropped as too long ({_tally(stats.dropped)}; batch/dropped_rows)")
        fixes += [_LENGTH_FIXES[reason] for reason in sorted(stats.dropped)]
    unusable = dict(reasons)
    if stats.token_text_mismatch:
        unusable["token_text_mismatch"] = stats.token_text_mismatch
    if unusable or stats.unusable_rollouts:
        causes.append(f"unusable rollouts: {_tally(unusable) or stats.unusable_rollouts} (batch/unusable_rollouts)")
        fixes += _unusable_fixes(unusable)
    if stats.rows:
        causes.append(f"{stats.rows} row(s) hold no sampled token (every completion empty)")
    raise UpdateError(
        f"iteration {iteration}: the batch has no sampled token to train on ({stats.rollouts} rollouts in groups "
        f"with signal, {stats.rows} rows, batch/trained_tokens 0): {'; '.join(causes) or 'no usable rollout'}. "
        f"Fix: {'; '.join(fixes) or 'check the rollouts'}; then rerun the iteration. To commit the unchanged "
        "checkpoint instead (e.g. a smoke run of a policy that cannot solve its tasks), set "
        "algorithm.allow_empty_update: true"
    )
