"""The ``openforge`` command line: a thin door onto each component's own CLI.

Every sub-command module imports its heavy libraries (torch, transformers, aiohttp)
inside the command body, so ``openforge --help`` answers at once.
"""

from __future__ import annotations

from components.core.command_group import command_group
from components.costs.cli import report_command
from components.engine.cli import engine_app, model_app
from components.environments.cli import tasks_app
from components.proxy.cli import proxy_command
from components.rollout.harnesses.cli import harness_app
from components.viewer.cli import view_command
from components.trainer.cli import batch_app
from pipelines.cluster.cli import deploy_command, status_command, submit_command
from pipelines.compile import compile_command
from pipelines.evaluate import eval_command
from pipelines.probe import probe_command
from pipelines.record import record_command
from pipelines.run import run_command
from pipelines.sft import sft_command
from pipelines.steps.cli import step_app

app = command_group(
    "Train LLM agents with RL inside the harness they are deployed with.", name="openforge", pretty_exceptions_enable=False
)
app.add_typer(model_app, name="model")
app.add_typer(engine_app, name="engine")
app.command("proxy")(proxy_command)
app.command("compile")(compile_command)
app.command("run")(run_command)
app.command("eval")(eval_command)
app.command("probe")(probe_command)
app.command("record")(record_command)
app.command("sft")(sft_command)
app.command("deploy")(deploy_command)
app.command("submit")(submit_command)
app.command("status")(status_command)
app.command("view")(view_command)
app.command("report")(report_command)
app.add_typer(batch_app, name="batch")
app.add_typer(harness_app, name="harness")
app.add_typer(tasks_app, name="tasks")

# What the iteration's containers run (`openforge step <name> --iteration K ...`), from the step specs.
app.add_typer(step_app, name="step")


if __name__ == "__main__":
    app()
