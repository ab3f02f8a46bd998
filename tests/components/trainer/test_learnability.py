"""The learnability probe's analysis on hand-made evaluations whose answers are known.

Outcomes go through the real scoring (score_outcomes), so the records, the masking of
infrastructure failures and the reason codes are the ones an evaluation stores.
"""

from __future__ import annotations

from components.core.outcome import Outcome, RolloutStatus
from components.reward.scoring import Capture, score_outcomes
from components.reward.stats import reason_counts
from components.trainer.learnability import (
    ALL_FAIL,
    ALL_PASS,
    BROKEN,
    LEARNABLE,
    MASKED,
    MIXED,
    NO_SIGNAL,
    SOLVED,
    TOO_HARD,
    WEAK,
    Learnability,
    assess_learnability,
    sampled_tokens,
)

OK, HARNESS, INFRA = RolloutStatus.OK, RolloutStatus.HARNESS_ERROR, RolloutStatus.INFRA_ERROR
PASS, FAIL = (OK, True), (OK, False)


def _outcome(task: str, index: int, status: RolloutStatus, passed: bool | None) -> Outcome:
    ok = status is OK
    return Outcome(
        rollout_id=f"{task}-s{index}", task_id=task, sample_index=index, iteration=0, status=status,
        passed=passed if ok else None, reward=(1.0 if passed else 0.0) if ok else None,
        details="" if ok else f"{status.value} in {task}",
    )  # fmt: skip


def _assess(groups: dict[str, list[tuple[RolloutStatus, bool | None]]], tokens_each: int = 10) -> Learnability:
    """Score ``groups`` (task -> (status, passed) per sample) and assess them; each rollout sampled ``tokens_each``."""
    outcomes = [_outcome(task, i, *spec) for task, specs in groups.items() for i, spec in enumerate(specs)]
    captures = {o.rollout_id: Capture(problem=None, sampled_tokens=tokens_each) for o in outcomes}
    codes: dict[str, str] = {}
    records, _ = score_outcomes(outcomes, captures, 0, codes)
    tokens = {o.rollout_id: (tokens_each, tokens_each) for o in outcomes}
    return assess_learnability(records, outcomes, tokens, reason_counts(codes))


def test_mixed_groups_are_the_trainable_share() -> None:
    found = _assess({"a": [PASS, FAIL, PASS, FAIL], "b": [FAIL] * 4, "c": [PASS, FAIL, FAIL, FAIL], "d": [PASS] * 4})
    assert [(g.task_id, g.kind) for g in found.tasks] == [("a", MIXED), ("b", ALL_FAIL), ("c", MIXED), ("d", ALL_PASS)]
    assert found.mixed_share == 0.5
    assert (found.trainable_tokens, found.sampled_tokens, found.token_share) == (80, 160, 0.5)
    assert found.verdict == LEARNABLE
    assert "2 of 4 group(s) have mixed outcomes (50%)" in found.reasons[0]


def test_every_rollout_passed_is_already_solved() -> None:
    found = _assess({"a": [PASS] * 4, "b": [PASS] * 4})
    assert (found.verdict, found.mixed_share, found.token_share) == (SOLVED, 0.0, 0.0)
    assert found.group_kinds[ALL_PASS] == 2


def test_every_rollout_failed_is_too_hard() -> None:
    found = _assess({"a": [FAIL] * 4, "b": [FAIL, FAIL, (RolloutStatus.TIMEOUT, None), FAIL]})
    assert found.verdict == TOO_HARD
    assert found.trainable_tokens == 0
    assert found.statuses["timeout"] == 1  # a failure kind, the agent's: graded, not broken


def test_groups_that_each_agree_carry_no_signal() -> None:
    found = _assess({"a": [PASS] * 4, "b": [FAIL] * 4})
    assert found.verdict == NO_SIGNAL
    assert "all_pass 1, all_fail 1" in found.reasons[0]


def test_few_mixed_groups_are_a_weak_signal() -> None:
    found = _assess({"a": [PASS, FAIL], "b": [FAIL] * 2, "c": [FAIL] * 2, "d": [FAIL] * 2, "e": [PASS] * 2})
    assert (found.verdict, found.mixed_share) == (WEAK, 0.2)


def test_mostly_harness_failures_is_broken_whatever_the_groups() -> None:
    # Harness errors are graded (reward 0), so group a is mixed; the setup is broken all the same.
    found = _assess({"a": [PASS, (HARNESS, None), (HARNESS, None), (HARNESS, None)], "b": [(HARNESS, None)] * 4})
    assert found.verdict == BROKEN
    assert found.reasons[0] == "88% of rollouts ended in setup failures (harness_error 7)"
    assert found.failure_examples["harness_error"] == "a-s1: harness_error in a"
    assert found.reasons[1] == "for example: a-s1: harness_error in a"


def test_infrastructure_failures_are_masked_not_graded() -> None:
    # Group a keeps one usable rollout of four: no GRPO baseline, so nothing of it trains.
    found = _assess({"a": [PASS, (INFRA, None), (INFRA, None), (INFRA, None)], "b": [PASS, FAIL, FAIL, FAIL]})
    assert [g.kind for g in found.tasks] == [MASKED, MIXED]
    assert found.unusable == {"group_no_baseline": 1, "infra_error": 3}
    assert found.verdict == BROKEN  # 4 of 8 rollouts cannot train: half the probe measured nothing
    assert found.trainable_tokens == 40


def test_no_rollouts_is_broken() -> None:
    found = assess_learnability([], [], {}, {})
    assert (found.verdict, found.mixed_share, found.token_share) == (BROKEN, None, None)


def test_tokens_follow_the_trainer_rule(call) -> None:
    # A side call and a failed call are sampled but never trained: the trainer's rows.trainable_calls says so.
    calls = [
        call(0, [1, 2], [3, 4, 5]),
        call(1, [1, 2, 3, 4, 5, 6], [7, 8], tags={"side_call": True}),
        call(2, [1, 2, 3, 4, 5, 6], [9], upstream_status=500, error="engine down"),
        call(3, [1, 2, 3, 4, 5, 6], [10, 11, 12, 13]),
    ]
    assert sampled_tokens(calls) == (10, 7)


def test_a_task_sampled_once_has_no_signal() -> None:
    found = _assess({"a": [PASS], "b": [FAIL]})
    assert (found.group_kinds[MIXED], found.verdict) == (0, NO_SIGNAL)
