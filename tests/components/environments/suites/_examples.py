"""The shipped benchmark examples (examples/suites/), written into task folders by the CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from components.environments.cli import tasks_app

SUITES = Path(__file__).resolve().parents[4] / "examples" / "suites"
SOURCES = {
    "webvoyager": SUITES / "webvoyager" / "tasks.jsonl",
    "mind2web": SUITES / "mind2web" / "Online_Mind2Web.json",
    "osworld": SUITES / "osworld",
}


def write_example(suite: str, out: Path) -> list[Path]:
    """``openforge tasks SUITE SOURCE OUT`` on the shipped example (answers and sites beside it); the folders."""
    result = CliRunner().invoke(tasks_app, [suite, str(SOURCES[suite]), str(out)])
    assert result.exit_code == 0, result.output
    return [Path(line) for line in result.output.splitlines()]
