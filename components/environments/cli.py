"""``openforge tasks miniwob``: write task folders of the offline suites."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from components.core.command_group import command_group

tasks_app = command_group("Write task folders of the offline task suites.")


@tasks_app.callback()
def _tasks_group() -> None:
    """Write task folders of the offline task suites."""


@tasks_app.command("miniwob")
def miniwob_command(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the task folders into (created if missing).")],
    tasks: Annotated[
        str | None,
        typer.Option(help="Comma-separated MiniWoB tasks (click-button,enter-text,...); default: the shipped suite."),
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(min=1, help="Episodes per task: seeds 0..N-1; default: the shipped suite's.")
    ] = None,
) -> None:
    """One task folder per (MiniWoB task, seed): the page's utterance as the prompt, its reward as the verdict.

    Opens each seeded episode in Chromium (apt-get install -y chromium) to read its utterance.
    """
    from components.environments.miniwob_tasks import SUITE_SEEDS, SUITE_TASKS, write_miniwob_tasks

    names = tuple(name.strip() for name in tasks.split(",") if name.strip()) if tasks is not None else SUITE_TASKS
    try:
        written = write_miniwob_tasks(out, names, seeds or SUITE_SEEDS)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    for folder in written:
        typer.echo(folder)
