"""Rewards and usability: the verifier decides the reward, the capture decides usability."""

from __future__ import annotations

import pytest

from components.reward import Capture, group_stats, inspect_capture, score_outcomes, task_stats

GOOD = Capture(problem=None, sampled_tokens=2)


def _score(outcomes, captures=None):
    captures = captures or {o.rollout_id: GOOD for o in outcomes}
    records, reasons = score_outcomes(outcomes, captures, iteration=3)
    return {r.rollout_id: r for r in records}, reasons


def test_verifier_reward_is_the_reward_and_agent_failures_score_zero_but_train(outcome):
    records, reasons = _score([
        outcome("t-s0", reward=0.75, passed=False),
        outcome("t-s1", "harness_error"),
        outcome("t-s2", "timeout"),
    ])

    assert [(r.reward, r.usable) for r in records.values()] == [(0.75, True), (0.0, True), (0.0, True)]
    assert reasons == {}
    assert records["t-s0"].group_id == "it3-t"


@pytest.mark.parametrize("status", ["infra_error", "verifier_error"])
def test_failures_that_are_not_the_agents_are_unusable(outcome, status):
    records, reasons = _score([outcome("t-s0", status, details="engine unreachable")])

    assert not records["t-s0"].usable
    assert "engine unreachable" in reasons["t-s0"]


def test_a_broken_capture_makes_a_passing_rollout_unusable(outcome):
    records, reasons = _score(
        [outcome("t-s0", passed=True)], {"t-s0": Capture(problem="the trajectory holds no recorded calls")}
    )

    assert records["t-s0"].reward == 1.0 and not records["t-s0"].usable
    assert reasons["t-s0"] == "the trajectory holds no recorded calls"


def test_capture_checks_name_what_is_missing(call):
    assert inspect_capture(None).problem == "no trajectory file was recorded"
    assert "no recorded calls" in inspect_capture([]).problem
    assert "lacks prompt or completion token ids" in inspect_capture([call(prompt_token_ids=[])]).problem
    assert "lacks completion logprobs" in inspect_capture([call(completion_logprobs=[])]).problem
    failed = call(upstream_status=502, error="bad gateway", completion=())
    assert inspect_capture([failed]).problem == "no model call succeeded"
    side = call(index=1, tags={"side_call": True}, completion_logprobs=[], completion=(7,))
    assert inspect_capture([call(), side]) == Capture(problem=None, sampled_tokens=3)


def test_group_statistics_count_all_equal_groups_as_skipped(outcome):
    records, _ = _score([
        outcome("a-s0", passed=True), outcome("a-s1", passed=True),
        outcome("b-s0", passed=True), outcome("b-s1", passed=False), outcome("b-s2", "infra_error"),
        outcome("c-s0", "infra_error"),
    ])

    groups = {g.task_id: g for g in group_stats(list(records.values()))}

    assert groups["a"].skipped_equal and groups["a"].reward_std == 0.0
    assert not groups["b"].skipped_equal and groups["b"].size == 2
    assert groups["b"].reward_mean == 0.5 and groups["b"].reward_std == pytest.approx(2**-0.5)
    assert groups["c"].size == 0 and not groups["c"].skipped_equal


def test_task_stats_use_graded_rollouts_only(outcome):
    outcomes = [
        outcome("t-s0", passed=True), outcome("t-s1", passed=False),
        outcome("t-s2", "timeout"), outcome("t-s3", "infra_error"),
    ]

    [stats] = task_stats(outcomes, k=2)
    [too_few] = task_stats(outcomes, k=4)

    assert (stats.n, stats.passed) == (3, 1)
    assert stats.pass_at_1 == pytest.approx(1 / 3)
    assert stats.pass_at_k == pytest.approx(2 / 3) and stats.pass_hat_k == 0.0
    assert too_few.pass_at_k is None and too_few.pass_hat_k is None


def test_context_overflow_is_graded_like_a_timeout(outcome):
    records, reasons = _score([outcome("t-s0", "context_overflow"), outcome("t-s1", passed=True)])

    assert (records["t-s0"].reward, records["t-s0"].usable) == (0.0, True) and reasons == {}


def test_a_group_left_with_one_usable_rollout_is_masked_whole_and_counted(outcome):
    codes = {}
    records, reasons = score_outcomes(
        [outcome("a-s0", passed=True), outcome("a-s1", "infra_error"), outcome("a-s2", "verifier_error"),
         outcome("b-s0", passed=True), outcome("b-s1", passed=False),
         outcome("c-s0", passed=True)],  # a task sampled once: never a comparison, left alone
        {rid: GOOD for rid in ("a-s0", "a-s1", "a-s2", "b-s0", "b-s1", "c-s0")},
        iteration=0,
        codes=codes,
    )  # fmt: skip
    by_id = {r.rollout_id: r for r in records}

    assert not by_id["a-s0"].usable and "no GRPO baseline" in reasons["a-s0"]
    assert by_id["b-s0"].usable and by_id["b-s1"].usable and by_id["c-s0"].usable
    assert codes == {"a-s0": "group_no_baseline", "a-s1": "infra_error", "a-s2": "verifier_error"}
    groups = {g.task_id: g for g in group_stats(records)}
    assert groups["a"].no_baseline and not groups["b"].no_baseline and not groups["c"].no_baseline


def test_capture_reasons_have_codes(call):
    assert inspect_capture(None).reason == "no_trajectory"
    assert inspect_capture([]).reason == "no_calls"
    assert inspect_capture([call(prompt_token_ids=[])]).reason == "missing_token_ids"
    assert inspect_capture([call(completion_logprobs=[])]).reason == "missing_logprobs"
    assert inspect_capture(None, read_error="bad").reason == "trajectory_unreadable"
