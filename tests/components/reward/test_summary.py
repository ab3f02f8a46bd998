"""The evaluation summary: pass rate, mean reward and pass@k per task and overall, status counts."""

from __future__ import annotations

import pytest

from components.core.outcome import RewardRecord, RolloutStatus
from components.reward.stats import TaskStats
from components.reward.summary import summarize_evaluation

OK, TIMEOUT, INFRA = RolloutStatus.OK, RolloutStatus.TIMEOUT, RolloutStatus.INFRA_ERROR


def _record(task: str, index: int, status: RolloutStatus, reward: float = 0.0) -> RewardRecord:
    return RewardRecord(
        rollout_id=f"{task}-s{index}", task_id=task, group_id=f"it0-{task}", reward=reward, usable=True, status=status
    )


def _summary():
    # Task a: 4 graded, 1 passed. Task b: 3 graded (one timeout), 2 passed, plus an infra error.
    records = [
        _record("a", 0, OK, 1.0), _record("a", 1, OK), _record("a", 2, OK), _record("a", 3, OK),
        _record("b", 0, OK, 1.0), _record("b", 1, OK, 1.0), _record("b", 2, TIMEOUT), _record("b", 3, INFRA),
    ]
    tasks = [
        TaskStats(task_id="a", n=4, passed=1, pass_at_1=0.25, pass_at_k=None, pass_hat_k=None),
        TaskStats(task_id="b", n=3, passed=2, pass_at_1=2 / 3, pass_at_k=None, pass_hat_k=None),
    ]
    about = {"experiment": "demo", "eval_id": "t", "checkpoint": {"requested": "base", "version": 0}, "task_source": "x"}
    return summarize_evaluation(records, tasks, 4, **about)


def test_pass_at_k_is_the_unbiased_estimator_per_task_and_its_mean_overall() -> None:
    summary = _summary()
    a, b = summary.tasks
    # n=4, c=1: pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6; pass@4 = 1 (the pass is among all four).
    assert a.pass_at == {1: pytest.approx(0.25), 2: pytest.approx(0.5), 3: pytest.approx(0.75), 4: pytest.approx(1.0)}
    # n=3, c=2: pass@2 = 1 - C(1,2)/C(3,2) = 1; pass@4 has too few graded rollouts: left out.
    assert b.pass_at == {1: pytest.approx(2 / 3), 2: pytest.approx(1.0), 3: pytest.approx(1.0), 4: None}
    assert summary.pass_at[2] == pytest.approx(0.75)
    assert summary.pass_at[4] == pytest.approx(1.0)  # the mean over the tasks that have it


def test_infra_errors_are_counted_but_never_graded() -> None:
    summary = _summary()
    a, b = summary.tasks
    assert (b.rollouts, b.graded, b.passed) == (4, 3, 2)
    assert b.pass_rate == pytest.approx(2 / 3)
    assert b.reward_mean == pytest.approx(2 / 3)  # the timeout counts as 0, the infra error not at all
    assert summary.pass_rate == pytest.approx((0.25 + 2 / 3) / 2)
    assert summary.reward_mean == pytest.approx(3 / 7)
    assert summary.status_counts["ok"] == 6
    assert summary.status_counts["timeout"] == 1
    assert summary.status_counts["infra_error"] == 1
    assert set(summary.status_counts) == {s.value for s in RolloutStatus}  # zeros listed too


def test_metrics_carry_overall_task_and_status_numbers_and_skip_missing_values() -> None:
    metrics = _summary().metrics()
    assert metrics["pass@2"] == pytest.approx(0.75)
    assert metrics["rollouts/infra_error"] == 1.0
    assert metrics["task/b/pass_rate"] == pytest.approx(2 / 3)
    assert all(isinstance(v, float) for v in metrics.values())
