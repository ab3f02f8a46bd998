"""The ``openforge`` command line: a thin door onto each component's own CLI.

Every sub-command module imports its heavy libraries (torch, transformers, aiohttp)
inside the command body, so ``openforge --help`` answers at once.
"""

from __future__ import annotations

import typer

from components.engine.cli import engine_app, model_app, serve_step_command
from components.environments.cli import tasks_app
from components.proxy.cli import proxy_command
from components.reward.cli import score_command
from components.rollout.cli import rollout_command
from components.rollout.harnesses.cli import harness_app
from components.trainer.cli import batch_app, train_command
from pipelines.cluster.cli import deploy_command, status_command, submit_command
from pipelines.commit import commit_command
from pipelines.compile import compile_command
from pipelines.eval_report import report_command
from pipelines.evaluate import eval_command
from pipelines.prepare import prepare_command
from pipelines.run import run_command
from pipelines.run_status import record_status_command

app = typer.Typer(
    name="openforge",
    help="Train LLM agents with RL inside the harness they are deployed with.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(model_app, name="model")
app.add_typer(engine_app, name="engine")
app.command("proxy")(proxy_command)
app.command("compile")(compile_command)
app.command("run")(run_command)
app.command("eval")(eval_command)
app.command("deploy")(deploy_command)
app.command("submit")(submit_command)
app.command("status")(status_command)
app.add_typer(batch_app, name="batch")
app.add_typer(harness_app, name="harness")
app.add_typer(tasks_app, name="tasks")

# What the iteration's containers run (`openforge step <name> --iteration K ...`).
step_app = typer.Typer(help="The RL iteration's steps, as the workflow runs them.", no_args_is_help=True)
step_app.command("prepare")(prepare_command)
step_app.command("serve")(serve_step_command)
step_app.command("rollout")(rollout_command)
step_app.command("score")(score_command)
step_app.command("train")(train_command)
step_app.command("commit")(commit_command)
step_app.command("report")(report_command)
step_app.command("record-status")(record_status_command)
app.add_typer(step_app, name="step")


if __name__ == "__main__":
    app()
