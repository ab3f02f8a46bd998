"""The commit step: log an iteration's metrics to MLflow once, then record it as committed.

`openforge step commit --iteration K` runs last in the iteration's DAG. It is idempotent:
a rerun logs only the metrics MLflow lacks for iteration K, replaces the artifacts, and
writes ``state.json`` last, so a run killed anywhere before resumes from the last
iteration that got this far.
"""

from __future__ import annotations

import os

import typer

from components.core.config import CONFIG_ENV, ConfigError, ExperimentConfig, config_from_env
from components.core.metrics import read_metrics
from components.core.storage import RunLayout, open_store
from pipelines.state import RunState, read_state, write_state


class CommitError(RuntimeError):
    """An iteration that cannot be committed; the message says what is missing."""


def commit_iteration(config: ExperimentConfig, iteration: int, config_text: str) -> RunState:
    """Log iteration ``iteration`` to MLflow (idempotently) and write ``state.json`` (last)."""
    from components.core.tracking import CONFIG_ARTIFACT, ExperimentTracker

    store = open_store(config.storage.uri, config.storage.endpoint_url)
    layout = RunLayout(config.name)
    marker = layout.checkpoint_marker(iteration + 1)
    if not store.exists(marker):
        raise CommitError(
            f"iteration {iteration}: checkpoint {iteration + 1} is not committed ({store.root}/{marker} is "
            "missing): the train step did not finish; rerun the iteration"
        )
    tracker = ExperimentTracker(config.tracking, config.name)
    tracker.log_iteration(iteration, read_metrics(store, layout.metrics(iteration)))
    tracker.log_text(config_text, CONFIG_ARTIFACT)
    tracker.log_summary()
    tracker.log_reward_plot()
    previous = read_state(store, layout)
    if previous is not None and previous.last_committed_iteration > iteration:
        return previous  # recommitting an old iteration never moves the run backwards
    state = RunState(last_committed_iteration=iteration, checkpoint=iteration + 1)
    write_state(store, layout, state)
    return state


def commit_command(
    iteration: int = typer.Option(..., "--iteration", min=0, help="The iteration to commit."),
) -> None:
    """Log an iteration's metrics to MLflow (once) and mark it committed in state.json."""
    try:
        config = config_from_env()
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        state = commit_iteration(config, iteration, os.environ[CONFIG_ENV])
    except CommitError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"committed iteration {state.last_committed_iteration}; next serves checkpoint {state.checkpoint}")
