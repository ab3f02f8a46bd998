"""``openforge step <name>``: one command per step, generated from its spec.

The command's flags are the spec's flags, so what the manifest passes and what the
command accepts cannot drift apart; the command calls the step's body with them, metered
(pipelines/steps/_costs.py: each run leaves its cost record).
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer

from components.core.command_group import command_group
from pipelines.steps import STEPS
from pipelines.steps._costs import run_step
from pipelines.steps._spec import REQUIRED, Flag, StepSpec


def _option(flag: Flag) -> inspect.Parameter:
    option = typer.Option(flag.option, help=flag.help, min=flag.min, max=flag.max)
    default = inspect.Parameter.empty if flag.default is REQUIRED else flag.default
    return inspect.Parameter(flag.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[flag.kind, option])


def step_command(spec: StepSpec) -> Any:
    """A typer command whose parameters are the spec's flags; it runs the step's body."""

    def command(**flags: Any) -> None:
        run_step(spec, flags)

    parameters = [_option(flag) for flag in spec.flags]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__name__ = spec.name.replace("-", "_")
    command.__doc__ = spec.summary
    return command


step_app = command_group("The RL iteration's steps, as the workflow runs them.")
for _step in STEPS.values():
    step_app.command(_step.name)(step_command(_step))
