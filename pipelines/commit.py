"""The commit step: log an iteration's metrics and its rollouts' traces to MLflow once, then
record it as committed.

The commit step (pipelines/steps/commit.py) runs last in the iteration's DAG. It is idempotent:
a rerun logs only the metrics MLflow lacks for iteration K, replaces the artifacts, and
writes ``state.json`` last, so a run killed anywhere before resumes from the last
iteration that got this far. The new state carries the task cursor the iteration's plan
left behind; committing past the first uncommitted iteration is refused (no gaps).
"""

from __future__ import annotations

import json
import sys

from components.analytics import record_analytics
from components.core.config import ExperimentConfig
from components.core.metrics import read_metrics
from components.core.rollout_traces import iteration_traces
from components.core.storage import ArtifactStore, RunLayout, open_store
from components.viewer.links import link_iteration_in_mlflow
from pipelines.state import RunState, read_state, write_state


class CommitError(RuntimeError):
    """An iteration that cannot be committed; the message says what is missing."""


def commit_iteration(config: ExperimentConfig, iteration: int, config_text: str) -> RunState:
    """Log iteration ``iteration`` to MLflow (idempotently) and write ``state.json`` (last)."""
    from components.core.tracking import CONFIG_ARTIFACT, ExperimentTracker

    store = open_store(config.storage.uri, config.storage.endpoint_url)
    layout = RunLayout(config.name)
    previous = _check_order(store, layout, iteration)
    marker = layout.checkpoint_marker(iteration + 1)
    if not store.exists(marker):
        raise CommitError(
            f"iteration {iteration}: checkpoint {iteration + 1} is not committed ({store.root}/{marker} is "
            "missing): the train step did not finish; rerun the iteration"
        )
    tracker = ExperimentTracker(config.tracking, config.name)
    analytics = record_analytics(store, layout, iteration)  # docs/analytics.md
    tracker.log_iteration(iteration, read_metrics(store, layout.metrics(iteration)) | analytics.metrics())
    traces, unreadable = iteration_traces(store, layout, iteration)
    tracker.log_rollout_traces(traces, iteration)
    if unreadable:  # a summary for the MLflow UI: never worth failing the commit, always worth saying
        first = next(iter(unreadable.items()))
        print(f"warning: {len(unreadable)} rollout(s) of iteration {iteration} have no MLflow trace: their "
              f"records cannot be read (first: {first[0]}: {first[1]})", file=sys.stderr, flush=True)  # fmt: skip
    tracker.log_text(config_text, CONFIG_ARTIFACT)
    link_iteration_in_mlflow(tracker, config.name, iteration, config.tracking.viewer_url)  # the iteration's viewer page, from its run
    tracker.log_summary()
    tracker.log_reward_plot()
    if previous is not None and previous.last_committed_iteration > iteration:
        return previous  # recommitting an old iteration never moves the run backwards
    state = RunState(
        last_committed_iteration=iteration, checkpoint=iteration + 1, task_cursor=_next_cursor(store, layout, iteration, previous)
    )
    write_state(store, layout, state)
    return state


def _check_order(store: ArtifactStore, layout: RunLayout, iteration: int) -> RunState | None:
    """The committed state, after checking ``iteration`` may be committed on top of it."""
    previous = read_state(store, layout)
    first_open = 0 if previous is None else previous.last_committed_iteration + 1
    if iteration > first_open:
        raise CommitError(
            f"iteration {iteration} cannot be committed before iteration {first_open} "
            f"({store.root}/{layout.state()}): the history would have a gap"
        )
    return previous


def _next_cursor(store: ArtifactStore, layout: RunLayout, iteration: int, previous: RunState | None) -> int:
    """Where the task cursor stands after ``iteration``: the plan says (plans before the cursor: unchanged)."""
    key = layout.plan(iteration)
    if not store.exists(key):
        raise CommitError(f"iteration {iteration} has no plan ({store.root}/{key}): run its prepare step first")
    plan = json.loads(store.get_bytes(key))
    return int(plan.get("next_task_cursor", 0 if previous is None else previous.task_cursor))
