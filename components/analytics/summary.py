"""An iteration's analytics: the rollouts' values aggregated overall, per harness and per
task, the change since the first iteration with its confidence interval, and the MLflow
metrics of all of it (names in docs/analytics.md, "In MLflow").
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Iterable, Sequence

from pydantic import BaseModel, Field

from components.analytics.rollout import ANALYTICS, RolloutAnalytics

ANALYTICS_SCHEMA_VERSION = "1.0"
PREFIX = "analytics"
_Z95 = 1.959963984540054  # the standard normal's 97.5% quantile
# Per-harness and per-task metrics only while there are few of them (a 500-task suite would
# bury the run's metric list); the store's analytics.json always has every group.
MAX_GROUPS_LOGGED = 16
MAX_TOOLS_LOGGED = 32


class Estimate(BaseModel):
    """An analytic over a set of rollouts: the mean of the rollouts it applies to, and their number."""

    mean: float | None = Field(description="None when it applies to no rollout.")
    n: int = Field(description="Rollouts it could be computed on.")


class Aggregate(BaseModel):
    """The analytics of a set of rollouts (an iteration, a harness, a task)."""

    rollouts: int = Field(description="Every rollout of the set, unreadable ones included.")
    unreadable: int = Field(description="Rollouts whose records cannot be read: counted here, in no analytic.")
    analytics: dict[str, Estimate] = Field(description="Each analytic of ANALYTICS.")
    tool_calls: dict[str, float] = Field(default_factory=dict, description="Mean calls per readable rollout, per tool.")


class Change(BaseModel):
    """An analytic's change from the first iteration to this one: a difference of means, 95% CI."""

    first: float
    latest: float
    difference: float = Field(description="latest - first.")
    low: float | None = Field(description="95% normal (Welch) interval; None with fewer than 2 rollouts on a side.")
    high: float | None
    n_first: int
    n_latest: int


class IterationAnalytics(BaseModel):
    """``RunLayout.analytics(k)``: iteration k's behaviour analytics (docs/analytics.md)."""

    schema_version: str = ANALYTICS_SCHEMA_VERSION
    iteration: int
    overall: Aggregate
    by_harness: dict[str, Aggregate]
    by_task: dict[str, Aggregate]
    change: dict[str, Change] = Field(
        default_factory=dict, description="Since iteration 0, per analytic; empty at iteration 0."
    )
    unreadable: dict[str, str] = Field(default_factory=dict, description="rollout_id -> why its records cannot be read.")
    rollouts: list[RolloutAnalytics]

    def metrics(self) -> dict[str, float]:
        """The MLflow metrics: overall, per harness and per task (when few), per tool, the change."""
        out = _aggregate_metrics(PREFIX, self.overall, counts=True)
        for tool, mean in list(self.overall.tool_calls.items())[:MAX_TOOLS_LOGGED]:
            out[f"{PREFIX}/tool_calls/{tool}"] = mean
        for kind, groups in (("harness", self.by_harness), ("task", self.by_task)):
            if len(groups) <= MAX_GROUPS_LOGGED:
                for name, aggregate in groups.items():
                    out |= _aggregate_metrics(f"{PREFIX}/{kind}/{name}", aggregate, counts=False)
        for name, change in self.change.items():
            out[f"{PREFIX}/change/{name}"] = change.difference
            if change.low is not None and change.high is not None:
                out[f"{PREFIX}/change/{name}/low"] = change.low
                out[f"{PREFIX}/change/{name}/high"] = change.high
        return out


def summarize(iteration: int, rollouts: Sequence[RolloutAnalytics], first: IterationAnalytics | None = None) -> IterationAnalytics:
    """The iteration's analytics; ``first`` (iteration 0's) adds the change since then."""
    by_harness, by_task = defaultdict(list), defaultdict(list)
    for rollout in rollouts:
        by_harness[rollout.harness].append(rollout)
        by_task[rollout.task_id].append(rollout)
    summary = IterationAnalytics(
        iteration=iteration,
        overall=aggregate(rollouts),
        by_harness={name: aggregate(group) for name, group in sorted(by_harness.items())},
        by_task={name: aggregate(group) for name, group in sorted(by_task.items())},
        unreadable={r.rollout_id: r.problem for r in rollouts if r.problem is not None},
        rollouts=list(rollouts),
    )
    if first is not None and iteration > first.iteration:
        summary.change = changes(first.rollouts, rollouts)
    return summary


def aggregate(rollouts: Sequence[RolloutAnalytics]) -> Aggregate:
    readable = [r for r in rollouts if r.problem is None]
    values = [r.values() for r in readable]
    estimates = {}
    for name in ANALYTICS:
        present = [v[name] for v in values if v[name] is not None]
        estimates[name] = Estimate(mean=statistics.fmean(present) if present else None, n=len(present))
    calls: dict[str, int] = defaultdict(int)
    for rollout in readable:
        for tool, n in rollout.tool_calls.items():
            calls[tool] += n
    return Aggregate(
        rollouts=len(rollouts),
        unreadable=len(rollouts) - len(readable),
        analytics=estimates,
        tool_calls={tool: n / len(readable) for tool, n in sorted(calls.items())},
    )


def changes(first: Sequence[RolloutAnalytics], latest: Sequence[RolloutAnalytics]) -> dict[str, Change]:
    """Each analytic's change between two iterations' rollouts, where both have values."""
    out = {}
    for name in ANALYTICS:
        change = difference_of_means(_present(first, name), _present(latest, name))
        if change is not None:
            out[name] = change
    return out


def difference_of_means(first: Sequence[float], latest: Sequence[float]) -> Change | None:
    """``mean(latest) - mean(first)`` with a 95% normal interval on Welch's standard error.

    Rollouts are independent draws of each iteration's policy; with fewer than 2 on a side
    the variance is unknown and the interval is left out (None), never made up.
    """
    if not first or not latest:
        return None
    a, b = statistics.fmean(first), statistics.fmean(latest)
    low = high = None
    if len(first) > 1 and len(latest) > 1:
        se = math.sqrt(statistics.variance(first) / len(first) + statistics.variance(latest) / len(latest))
        low, high = b - a - _Z95 * se, b - a + _Z95 * se
    return Change(first=a, latest=b, difference=b - a, low=low, high=high, n_first=len(first), n_latest=len(latest))


def _present(rollouts: Iterable[RolloutAnalytics], name: str) -> list[float]:
    return [v for r in rollouts if (v := r.values()[name]) is not None]


def _aggregate_metrics(prefix: str, aggregate: Aggregate, *, counts: bool) -> dict[str, float]:
    out = {f"{prefix}/rollouts": float(aggregate.rollouts), f"{prefix}/unreadable": float(aggregate.unreadable)}
    for name, estimate in aggregate.analytics.items():
        if estimate.mean is not None:  # no data is left out, not logged as a misleading 0
            out[f"{prefix}/{name}"] = estimate.mean
        if counts:
            out[f"{prefix}/{name}/n"] = float(estimate.n)
    return out
