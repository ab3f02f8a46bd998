"""record-status: the workflow's exit hook, run however the workflow ended.

Calls ``pipelines.run_status.record_run_status``: the ending in the experiment's MLflow
run, so a workflow that commits nothing is visible beside the metrics.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import step_config
from pipelines.steps._spec import Flag, StepSpec

# Argo's workflow phases as `{{workflow.status}}` gives them to an exit handler.
STATUSES = ("Succeeded", "Failed", "Error")


def run(workflow: str, status: str) -> None:
    record_run_status = SPEC.component()
    config = step_config()
    try:
        record = record_run_status(config, workflow, status)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--status") from None
    committed = record.last_committed_iteration
    typer.echo(f"{workflow}: {status}; last committed iteration: {'none' if committed is None else committed}")


SPEC = StepSpec(
    name="record-status",
    summary="Record how a workflow run ended in the experiment's MLflow run (the workflow's exit hook).",
    calls="pipelines.run_status:record_run_status",
    run=run,
    flags=(
        Flag("workflow", str, "The workflow's name ({{workflow.name}}).", value="{{workflow.name}}"),
        Flag("status", str, f"How it ended ({{{{workflow.status}}}}): {', '.join(STATUSES)}.", value="{{workflow.status}}"),
    ),
    inputs=(),
    reads=("state",),
)
