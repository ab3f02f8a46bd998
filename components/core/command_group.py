"""Every ``openforge`` command group, made one way: plain help, no args shows it.

Plain (click's) help, not typer's rich panels: rendering those costs about 0.3 s of each
cold ``openforge ... --help`` and of nothing else (docs/benchmarks.md, "Cold start of the
CLI"), and a CLI that pods and scripts start many times should answer at once.
"""

from __future__ import annotations

import typer


def command_group(help: str, **settings: object) -> typer.Typer:
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None, **settings)
