"""``openforge tasks miniwob|webvoyager|mind2web|osworld|shell-family``: write task folders of the offline suites.

Also ``python -m components.environments tasks ...``. The benchmark loaders
(components/environments/suites/) check every entry of the source before they write, and
replace each task folder whole, so a rerun writes the same files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from components.core.command_group import command_group

if TYPE_CHECKING:
    from components.environments.suites.common import TaskFolder

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


@tasks_app.command("shell-family")
def shell_family_command(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the task folders into (created if missing).")],
    count: Annotated[int, typer.Option(min=1, help="Tasks to write, the kinds in turn.")] = 20,
    seed: Annotated[int, typer.Option(help="Draws the file names and contents.")] = 0,
    prefix: Annotated[str, typer.Option(help="Task ids are <prefix>-NN-<kind>: give a held-out set its own.")] = "task",
    held_out_of: Annotated[
        Path | None, typer.Option(help="A training set these tasks must not overlap (same kind on the same file).")
    ] = None,
) -> None:
    """Small shell tasks whose file names, contents and sizes differ, each with a reference solution."""
    from components.environments.shell_family import check_no_overlap, write_shell_family

    written = write_shell_family(out, count, seed, prefix)
    if held_out_of is not None:
        try:
            check_no_overlap(held_out_of, out)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--seed") from None
    for folder in written:
        typer.echo(folder)


_Source = Annotated[
    Path, typer.Argument(metavar="SOURCE", help="The benchmark's task file (for osworld, also a folder of them).")
]
_Out = Annotated[Path, typer.Argument(metavar="OUT", help="Folder to write the task folders into (created if missing).")]
_Sites = Annotated[
    Path | None,
    typer.Option(help="sites.yaml: each start URL's origin -> a folder of its pages; default: sites.yaml beside SOURCE."),
]


@tasks_app.command("webvoyager")
def webvoyager_command(
    source: _Source,
    out: _Out,
    answers: Annotated[
        Path | None, typer.Option(help="WebVoyager's reference_answer.json; default: the one beside SOURCE.")
    ] = None,
    sites: _Sites = None,
) -> None:
    """A web task per line of a WebVoyager JSONL: its site served from local pages, its reference answer checked."""
    from components.environments.suites.webvoyager import ANSWERS_FILE, webvoyager_folders

    answers, sites = answers or source.parent / ANSWERS_FILE, sites or _default_sites(source)
    _write(out, lambda: webvoyager_folders(source, answers, sites, "openforge tasks webvoyager SOURCE OUT"))


@tasks_app.command("mind2web")
def mind2web_command(
    source: _Source,
    out: _Out,
    answers: Annotated[
        Path | None, typer.Option(help="answers.json: task_id -> {includes, excludes}; default: the one beside SOURCE.")
    ] = None,
    sites: _Sites = None,
) -> None:
    """A web task per entry of an Online-Mind2Web JSON list: its site served from local pages, its answer checked."""
    from components.environments.suites.mind2web import ANSWERS_FILE, mind2web_folders

    answers, sites = answers or source.parent / ANSWERS_FILE, sites or _default_sites(source)
    _write(out, lambda: mind2web_folders(source, answers, sites, "openforge tasks mind2web SOURCE OUT"))


@tasks_app.command("osworld")
def osworld_command(source: _Source, out: _Out) -> None:
    """A desktop task per OSWorld task JSON: its launch/execute/download set-up on a local X display, its evaluator
    as a local verifier (exact_match, compare_text_file, check_include_exclude; others are refused)."""
    from components.environments.suites.osworld import osworld_folders

    _write(out, lambda: osworld_folders(source, "openforge tasks osworld SOURCE OUT"))


def _default_sites(source: Path) -> Path:
    from components.environments.suites.web_suite import SITES_FILE

    return source.parent / SITES_FILE


def _write(out: Path, folders: Callable[[], list[TaskFolder]]) -> None:
    from components.environments.suites.common import SuiteError, write_folders

    try:
        written = write_folders(out, folders())
    except SuiteError as exc:  # the source's content, not the command line: no usage text
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for folder in written:
        typer.echo(folder)
