"""report: an evaluation's last step, in place of train and commit.

Calls ``pipelines.eval_report.write_report``: the summary of what score wrote and serve
served, in the store and under ``eval/`` in MLflow.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import call_on_store
from pipelines.steps._spec import StepSpec, iteration_flag


def run(iteration: int) -> None:
    from pipelines.eval_report import ReportError

    summary = call_on_store(SPEC, iteration, refusals=(ReportError,))
    typer.echo(f"evaluation {summary.eval_id}: pass rate {summary.pass_rate}, mean reward {summary.reward_mean}")


SPEC = StepSpec(
    name="report",
    summary="Write an evaluation's summary to the store and log it to MLflow under eval/.",
    calls="pipelines.eval_report:write_report",
    run=run,
    flags=(iteration_flag("The evaluation's iteration (what prepare resolved)."),),
    reads=("rewards", "evaluated_checkpoint"),
    writes=("eval_summary", "costs"),
)
