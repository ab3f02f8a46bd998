"""An iteration's analytics from its store, written back beside it (``RunLayout.analytics``).

The commit step calls ``record_analytics``: it reads every rollout the plan names (the
unreadable counted, never dropped), compares with iteration 0's stored analytics (or, when
a run predates them, iteration 0's recordings) and writes ``analytics.json``; a rerun
writes the same file again.
"""

from __future__ import annotations

from components.analytics.rollout import UNKNOWN_HARNESS, RolloutAnalytics, rollout_analytics
from components.analytics.summary import IterationAnalytics, summarize
from components.core.rollout_records import iteration_records
from components.core.storage import ArtifactStore, RunLayout


def iteration_rollouts(store: ArtifactStore, layout: RunLayout, iteration: int) -> list[RolloutAnalytics]:
    """The analytics of every rollout the iteration's plan names, in plan order."""
    out = []
    for records in iteration_records(store, layout, iteration):
        if records.problem is not None:
            out.append(RolloutAnalytics(rollout_id=records.rollout_id, task_id=records.task_id, harness=UNKNOWN_HARNESS, problem=records.problem))
        else:
            out.append(rollout_analytics(records.rollout_id, records.task_id, records.calls, records.outcome))
    return out


def read_analytics(store: ArtifactStore, layout: RunLayout, iteration: int) -> IterationAnalytics | None:
    """The stored analytics of an iteration; None when it has none (not committed, or older)."""
    key = layout.analytics(iteration)
    return IterationAnalytics.model_validate_json(store.get_bytes(key)) if store.exists(key) else None


def record_analytics(store: ArtifactStore, layout: RunLayout, iteration: int) -> IterationAnalytics:
    """Compute iteration ``iteration``'s analytics, with the change since iteration 0, and store them."""
    first = None
    if iteration > 0:
        first = read_analytics(store, layout, 0) or summarize(0, iteration_rollouts(store, layout, 0))
    summary = summarize(iteration, iteration_rollouts(store, layout, iteration), first)
    store.put_bytes(layout.analytics(iteration), summary.model_dump_json(indent=1).encode())
    return summary
