"""``openforge harness list`` and ``openforge harness install NAME``: the pinned harnesses."""

from __future__ import annotations

from typing import Annotated

import typer

from components.core.command_group import command_group

harness_app = command_group("Install the agent harnesses rollouts run (pinned versions).")


@harness_app.callback()
def _harness_group() -> None:
    """Install the agent harnesses rollouts run (pinned versions)."""


@harness_app.command("list")
def list_command() -> None:
    """Each harness with its pinned version and whether it is installed."""
    from components.rollout.harnesses import HARNESSES, get_harness, harness_home

    typer.echo(f"harness home: {harness_home()}")
    for name in HARNESSES:
        adapter = get_harness(name)
        state = "installed" if adapter.is_installed() else f"missing: openforge harness install {name}"
        typer.echo(f"  {name:<16} {adapter.version:<12} {state}")


@harness_app.command("install")
def install_command(
    names: Annotated[list[str] | None, typer.Argument(help="Harnesses to install (see `openforge harness list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Install every pinned harness.")] = False,
) -> None:
    """Install harnesses at their pinned versions; one already installed at its pin is left alone."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from components.rollout.harnesses import HARNESSES, HarnessInstallError, get_harness

    if all_ == bool(names):
        raise typer.BadParameter("name the harnesses to install, or pass --all (not both)")
    chosen = list(HARNESSES) if all_ else names or []
    unknown = [name for name in chosen if name not in HARNESSES]
    if unknown:
        raise typer.BadParameter(f"no harness named {', '.join(unknown)}; known: {', '.join(HARNESSES)}")
    # In parallel: each install waits on downloads, not the CPU, and a fresh machine's CI
    # pays for all of them (npm harnesses share the Node runtime, whose install is locked).
    failed = False
    with ThreadPoolExecutor(max_workers=max(len(chosen), 1)) as pool:
        futures = {pool.submit(get_harness(name).install): name for name in chosen}
        for future in as_completed(futures):
            name = futures[future]
            version = get_harness(name).version
            try:
                result = future.result()
            except HarnessInstallError as exc:
                typer.echo(f"error: installing {name} {version} failed: {exc}", err=True)
                failed = True
                continue
            if result is None:
                typer.echo(f"{name}: built in, nothing to install")
            elif result.already_installed:
                typer.echo(f"{name} {version}: already installed in {result.folder}")
            else:
                typer.echo(f"{name} {version}: installed in {result.folder} ({result.seconds:.0f} s)")
    if failed:
        raise typer.Exit(1)
