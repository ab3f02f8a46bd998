"""Outcomes to rewards: what each rollout earned, and whether training may use it.

The verifier decides the reward. Whether a rollout is *usable* is a separate question:
training must not learn from failures that are not the policy's (infra errors, a crashed
verifier) nor from rollouts whose calls were not captured token for token.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Mapping, MutableMapping, Sequence

from components.core.choices import MISS
from components.core.outcome import Outcome, RewardRecord, RolloutStatus
from components.core.rollout_identity import group_id
from components.core.trajectory import RecordedCall, latest_attempt

# Statuses that say something about the agent: the verifier judged it, or it failed on its
# own (crashed, ran out of time or steps, or filled its context): reward 0, and training learns from it.
GRADED_STATUSES = frozenset(
    {
        RolloutStatus.OK,
        RolloutStatus.HARNESS_ERROR,
        RolloutStatus.TIMEOUT,
        RolloutStatus.CONTEXT_OVERFLOW,
        RolloutStatus.STEP_LIMIT,
    }
)
# Reason code of a group's last usable rollout, masked because it has nothing to be compared with.
NO_BASELINE = "group_no_baseline"


@dataclass(frozen=True)
class Capture:
    """What scoring needs to know about one rollout's recorded calls."""

    problem: str | None  # why the calls cannot be trained on; None when they can
    sampled_tokens: int = 0  # completion tokens the policy sampled (forced ones not counted)
    reason: str | None = None  # the problem's code, counted in the unusable/<code> metrics
    forced_tokens: int = 0  # completion tokens the engine forced (choice mode's one-candidate turns)
    choice_calls: int = 0  # answered non-side calls that carry a choice-mode mark
    choice_misses: int = 0  # of those, calls that matched no candidate of the book (sampled freely)


def judged_attempt(outcome: Outcome) -> int | None:
    """The runner's attempt whose verdict the outcome holds (the last); None for older outcomes."""
    attempts = outcome.extra.get("attempts")
    return attempts - 1 if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts > 0 else None


def inspect_capture(
    calls: Sequence[RecordedCall] | None, read_error: str | None = None, attempt: int | None = None
) -> Capture:
    """Check that a rollout's calls carry the token ids and logprobs training needs.

    Only the judged attempt counts (``attempt``, else the latest recorded): earlier
    attempts ended on an infrastructure failure and are kept in the file, not trained on.
    """
    if read_error is not None:
        return Capture(problem=f"trajectory unreadable: {read_error}", reason="trajectory_unreadable")
    if calls is None:
        return Capture(problem="no trajectory file was recorded", reason="no_trajectory")
    calls = latest_attempt(calls, attempt)
    if not calls:
        where = f" for attempt {attempt}" if attempt else ""
        return Capture(problem=f"the trajectory holds no recorded calls{where}", reason="no_calls")
    answered = [
        call for call in calls
        if call.upstream_status == 200 and call.error is None and not call.tags.get("side_call")
    ]
    sampled = sum(sum(call.sampled_mask()) for call in calls)
    marked = [call for call in answered if call.choice is not None]
    counts = Capture(
        problem=None,
        sampled_tokens=sampled,
        forced_tokens=sum(len(call.completion_token_ids) for call in calls) - sampled,
        choice_calls=len(marked),
        choice_misses=sum(call.choice == MISS for call in marked),
    )
    for call in answered:
        if not call.prompt_token_ids or not call.completion_token_ids:
            problem = f"call {call.call_index} lacks prompt or completion token ids"
            return replace(counts, problem=problem, reason="missing_token_ids")
        if len(call.completion_logprobs) != len(call.completion_token_ids):
            problem = f"call {call.call_index} lacks completion logprobs"
            return replace(counts, problem=problem, reason="missing_logprobs")
    if not answered:
        return replace(counts, problem="no model call succeeded", reason="no_successful_call")
    return counts


class ChoiceMissError(RuntimeError):
    """Choice mode found no candidate for any call of an iteration: nothing it ran was a choice."""


def check_choice_misses(outcomes: Sequence[Outcome], captures: Mapping[str, Capture], iteration: int) -> None:
    """Fail an iteration in which every marked non-side call missed the book.

    Such an iteration sampled freely where the experiment meant the policy to choose,
    typically because the harness's version changed the prompts the book's ``match`` text
    or turn numbers were written against; training on it would pass free text off as choices.
    """
    calls = sum(c.choice_calls for c in captures.values())
    if not calls or any(c.choice_calls > c.choice_misses for c in captures.values()):
        return
    missed = sorted({o.task_id for o in outcomes if captures.get(o.rollout_id, Capture(None)).choice_misses})
    harnesses = sorted({f"{o.extra.get('harness', '?')} {o.extra.get('harness_version', '?')}" for o in outcomes})
    raise ChoiceMissError(
        f"iteration {iteration}: all {calls} calls in choice mode matched no candidate of the choice book "
        f"(tasks {', '.join(missed[:5])}{' ...' if len(missed) > 5 else ''}; harness {', '.join(harnesses)}): the "
        "harness's conversations no longer hold the tasks' match text, or its turns are not the book's. Compare "
        "a recorded call (openforge view) with the task's choices, or set engine.dev_mode: sample"
    )


def _assess(outcome: Outcome, capture: Capture) -> tuple[float, str | None, str | None]:
    """The reward, why training must not use the rollout (None: it may), and that reason's code."""
    if outcome.status is RolloutStatus.OK:
        if outcome.reward is None:  # a runner bug: do not guess
            return 0.0, "status ok but the outcome carries no reward", "ok_without_reward"
        return float(outcome.reward), capture.problem, capture.reason
    if outcome.status in GRADED_STATUSES:
        # A harness that crashed, ran out of time or filled its context failed the task: that is signal.
        return 0.0, capture.problem, capture.reason
    return 0.0, f"status {outcome.status.value}: {outcome.details or 'no details'}", outcome.status.value


def score_outcomes(
    outcomes: Sequence[Outcome],
    captures: Mapping[str, Capture],
    iteration: int,
    codes: MutableMapping[str, str] | None = None,
) -> tuple[list[RewardRecord], dict[str, str]]:
    """One RewardRecord per outcome (rollout-id order), and the reason for each unusable one.

    ``codes``, when given, receives each unusable rollout's reason code (for metrics).
    """
    records, reasons, found = [], {}, {}
    for outcome in sorted(outcomes, key=lambda o: o.rollout_id):
        capture = captures.get(outcome.rollout_id, Capture(problem="no trajectory file was recorded", reason="no_trajectory"))
        reward, problem, code = _assess(outcome, capture)
        if problem is not None:
            reasons[outcome.rollout_id] = problem
            found[outcome.rollout_id] = code or "unknown"
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
    records = _mask_groups_without_baseline(records, reasons, found)
    if codes is not None:
        codes.update(found)
    return records, reasons


def _mask_groups_without_baseline(
    records: list[RewardRecord], reasons: dict[str, str], codes: dict[str, str]
) -> list[RewardRecord]:
    """Mask a group's last usable rollout when the others were masked: GRPO has no baseline for it.

    Only groups that masking shrank (more than one rollout planned): a task sampled once
    was never a comparison, and the trainer skips such one-rollout groups for lack of signal.
    """
    members: dict[str, list[RewardRecord]] = defaultdict(list)
    for record in records:
        members[record.group_id].append(record)
    lone = {
        usable[0].rollout_id: gid
        for gid, group in members.items()
        if len(group) > 1 and len(usable := [r for r in group if r.usable]) == 1
    }
    out = []
    for record in records:
        gid = lone.get(record.rollout_id)
        if gid is not None:
            others = len(members[gid]) - 1
            reasons[record.rollout_id] = (
                f"the only usable rollout of group {gid} ({others} other(s) masked): no GRPO baseline to compare it with"
            )
            codes[record.rollout_id] = NO_BASELINE
            record = record.model_copy(update={"usable": False})
        out.append(record)
    return out
