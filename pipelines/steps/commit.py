"""commit: the iteration's metrics, behaviour analytics and rollout traces to MLflow (once), then ``state.json`` (last).

Calls ``pipelines.commit.commit_iteration``, idempotent: a rerun logs only what MLflow
lacks, and a run killed before the state is written resumes from the last commit.
"""

from __future__ import annotations

import os

import typer

from pipelines.steps._context import step_config, stop
from pipelines.steps._spec import StepSpec, iteration_flag


def run(iteration: int) -> None:
    from components.core.config import CONFIG_ENV
    from pipelines.commit import CommitError

    commit_iteration = SPEC.component()
    config = step_config()
    try:
        state = commit_iteration(config, iteration, os.environ[CONFIG_ENV])
    except CommitError as exc:
        stop(f"error: {exc}")
    typer.echo(f"committed iteration {state.last_committed_iteration}; next serves checkpoint {state.checkpoint}")


SPEC = StepSpec(
    name="commit",
    summary="Log an iteration's metrics, behaviour analytics and rollout traces to MLflow (once) and mark it committed in state.json.",
    calls="pipelines.commit:commit_iteration",
    run=run,
    flags=(iteration_flag("The iteration to commit."),),
    reads=("state", "checkpoint_marker", "metrics", "plan", "trajectory", "outcome"),
    writes=("state", "analytics", "costs"),
)
