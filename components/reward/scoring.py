"""Outcomes to rewards: what each rollout earned, and whether training may use it.

The verifier decides the reward. Whether a rollout is *usable* is a separate question:
training must not learn from failures that are not the policy's (infra errors, a crashed
verifier) nor from rollouts whose calls were not captured token for token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from components.core.outcome import Outcome, RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall

# Statuses that say something about the agent: the verifier judged it, or it failed on its own.
GRADED_STATUSES = frozenset({RolloutStatus.OK, RolloutStatus.HARNESS_ERROR, RolloutStatus.TIMEOUT})


def group_id(iteration: int, task_id: str) -> str:
    """The GRPO group of a task's rollouts in one iteration (the contract's uid)."""
    return f"it{iteration}-{task_id}"


@dataclass(frozen=True)
class Capture:
    """What scoring needs to know about one rollout's recorded calls."""

    problem: str | None  # why the calls cannot be trained on; None when they can
    sampled_tokens: int = 0


def inspect_capture(calls: Sequence[RecordedCall] | None, read_error: str | None = None) -> Capture:
    """Check that a rollout's calls carry the token ids and logprobs training needs."""
    if read_error is not None:
        return Capture(problem=f"trajectory unreadable: {read_error}")
    if calls is None:
        return Capture(problem="no trajectory file was recorded")
    sampled = sum(len(call.completion_token_ids) for call in calls)
    if not calls:
        return Capture(problem="the trajectory holds no recorded calls", sampled_tokens=0)
    answered = [
        call for call in calls
        if call.upstream_status == 200 and call.error is None and not call.tags.get("side_call")
    ]
    for call in answered:
        if not call.prompt_token_ids or not call.completion_token_ids:
            return Capture(problem=f"call {call.call_index} lacks prompt or completion token ids", sampled_tokens=sampled)
        if len(call.completion_logprobs) != len(call.completion_token_ids):
            return Capture(problem=f"call {call.call_index} lacks completion logprobs", sampled_tokens=sampled)
    if not answered:
        return Capture(problem="no model call succeeded", sampled_tokens=sampled)
    return Capture(problem=None, sampled_tokens=sampled)


def _assess(outcome: Outcome, capture: Capture) -> tuple[float, str | None]:
    """The reward, and why training must not use the rollout (None: it may)."""
    if outcome.status is RolloutStatus.OK:
        if outcome.reward is None:
            return 0.0, "status ok but the outcome carries no reward"  # a runner bug: do not guess
        return float(outcome.reward), capture.problem
    if outcome.status in GRADED_STATUSES:
        # A harness that crashed or ran out of time failed the task: that is signal.
        return 0.0, capture.problem
    return 0.0, f"status {outcome.status.value}: {outcome.details or 'no details'}"


def score_outcomes(
    outcomes: Sequence[Outcome], captures: Mapping[str, Capture], iteration: int
) -> tuple[list[RewardRecord], dict[str, str]]:
    """One RewardRecord per outcome (rollout-id order), and the reason for each unusable one."""
    records, reasons = [], {}
    for outcome in sorted(outcomes, key=lambda o: o.rollout_id):
        capture = captures.get(outcome.rollout_id, Capture(problem="no trajectory file was recorded"))
        reward, problem = _assess(outcome, capture)
        if problem is not None:
            reasons[outcome.rollout_id] = problem
        records.append(
            RewardRecord(
                rollout_id=outcome.rollout_id,
                task_id=outcome.task_id,
                group_id=group_id(iteration, outcome.task_id),
                reward=reward,
                usable=problem is None,
                status=outcome.status,
            )
        )
    return records, reasons
