"""Aggregation per iteration, harness and task; the change since the first iteration with its
confidence interval; the MLflow metric names."""

from __future__ import annotations

import math

import pytest

from components.analytics import RolloutAnalytics, difference_of_means, summarize
from components.analytics.summary import MAX_GROUPS_LOGGED


def _rollout(rid: str, harness: str = "reference", **fields) -> RolloutAnalytics:
    return RolloutAnalytics(rollout_id=rid, task_id=rid.rpartition("-s")[0], harness=harness, status="ok", **fields)


def test_means_are_over_the_rollouts_each_analytic_applies_to_and_unreadable_ones_are_counted() -> None:
    rollouts = [
        _rollout("a-s0", turns=2, passed=True, writes=1, verified=True, errors=2, recovered=1, tool_calls={"shell": 3}, declared_tools=["shell"]),
        _rollout("a-s1", turns=4, passed=False, writes=1, verified=False, tool_calls={"shell": 1}, declared_tools=["shell", "read"]),
        _rollout("b-s0", turns=1, passed=True),
        RolloutAnalytics(rollout_id="b-s1", task_id="b", harness="unknown", problem="not valid JSON"),
    ]

    summary = summarize(0, rollouts)
    overall = summary.overall.analytics

    assert (summary.overall.rollouts, summary.overall.unreadable) == (4, 1)
    assert summary.unreadable == {"b-s1": "not valid JSON"}
    assert (overall["turns"].mean, overall["turns"].n) == (7 / 3, 3)
    assert (overall["self_verification"].mean, overall["self_verification"].n) == (0.5, 2)
    assert (overall["error_recovery"].mean, overall["error_recovery"].n) == (0.5, 1)
    assert (overall["tool_coverage"].mean, overall["tool_coverage"].n) == ((1 + 0.5) / 2, 2)
    assert (overall["multi_step_completion"].mean, overall["multi_step_completion"].n) == (0.5, 2)
    assert summary.overall.tool_calls == {"shell": 4 / 3}
    assert set(summary.by_task) == {"a", "b"} and summary.by_task["b"].unreadable == 1
    assert set(summary.by_harness) == {"reference", "unknown"}
    assert summary.change == {}


def test_metric_names_and_no_data_left_out() -> None:
    summary = summarize(0, [_rollout("a-s0", turns=1, tool_calls={"Bash": 2}), _rollout("b-s0", harness="codex", turns=3)])

    metrics = summary.metrics()

    assert metrics["analytics/turns"] == 2.0 and metrics["analytics/turns/n"] == 2.0
    assert "analytics/error_recovery" not in metrics and metrics["analytics/error_recovery/n"] == 0.0
    assert metrics["analytics/tool_calls/Bash"] == 1.0
    assert metrics["analytics/harness/codex/turns"] == 3.0 and metrics["analytics/task/a/turns"] == 1.0
    assert metrics["analytics/rollouts"] == 2.0 and metrics["analytics/unreadable"] == 0.0


def test_per_task_metrics_stop_past_the_cardinality_limit() -> None:
    many = [_rollout(f"t{i}-s0", turns=1) for i in range(MAX_GROUPS_LOGGED + 1)]

    metrics = summarize(0, many).metrics()

    assert not any(name.startswith("analytics/task/") for name in metrics)
    assert "analytics/harness/reference/turns" in metrics


def test_difference_of_means_with_a_welch_interval() -> None:
    change = difference_of_means([0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0])

    se = math.sqrt((1 / 3) / 4 + (0.25) / 4)  # sample variances 1/3 and 1/4
    assert change.difference == pytest.approx(0.25)
    assert (change.low, change.high) == pytest.approx((0.25 - 1.959964 * se, 0.25 + 1.959964 * se))
    assert (change.n_first, change.n_latest) == (4, 4)


def test_no_interval_is_made_up_from_a_single_rollout() -> None:
    change = difference_of_means([1.0], [0.0, 1.0])

    assert change.difference == -0.5 and change.low is None and change.high is None
    assert difference_of_means([], [1.0]) is None


def test_the_change_since_the_first_iteration_is_logged() -> None:
    first = summarize(0, [_rollout("a-s0", turns=2), _rollout("a-s1", turns=4)])
    latest = summarize(2, [_rollout("a-s0", turns=1), _rollout("a-s1", turns=1)], first)

    assert latest.change["turns"].difference == -2.0
    metrics = latest.metrics()
    assert metrics["analytics/change/turns"] == -2.0
    assert metrics["analytics/change/turns/low"] < -2.0 < metrics["analytics/change/turns/high"]
    assert "error_recovery" not in latest.change  # no value on either side: no change to report
