"""The cold start of `openforge --help`: a fresh interpreter each run, from the call to its exit.

Every step, sidecar and runner that starts cold pays at least this, and a user typing
`openforge --help` waits for it. Measured apart from the quickstart (seconds, where the
whole overhead benchmark takes many minutes), so ``bench_overhead.py --cli-start`` can
rewrite this one figure alone.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_sections import Stamp
from components.core.services import openforge_argv

SUBSECTION = "Cold start of `openforge --help`"
TARGET_S = 0.3  # issue 18: an instant CLI
RUNS = 9
# For scale, timed the same way: the interpreter alone, and the CLI library alone.
FLOORS = {"a bare interpreter": "pass", "importing typer alone": "import typer"}


@dataclass(frozen=True)
class CliStart(Stamp):
    runs_s: tuple[float, ...]
    floors_s: dict[str, float]  # FLOORS' names -> median seconds: what this CLI cannot go under

    @property
    def median_s(self) -> float:
        return statistics.median(self.runs_s)


def help_seconds(repo: Path, runs: int = RUNS) -> tuple[float, ...]:
    """Wall time of each of ``runs`` `openforge --help` runs, each a fresh interpreter, one after another."""
    return _seconds(openforge_argv("--help"), repo, runs)


def floor_seconds(repo: Path, runs: int = RUNS) -> dict[str, float]:
    """Median seconds of each of FLOORS, timed as the `--help` runs are."""
    return {name: statistics.median(_seconds([sys.executable, "-c", code], repo, runs)) for name, code in FLOORS.items()}


def _seconds(argv: list[str], repo: Path, runs: int) -> tuple[float, ...]:
    """One untimed run first: the figure is the interpreter's and the imports' cost, not
    that of reading the files from disk after another job evicted them from the page cache."""
    env = {**os.environ, "PYTHONPATH": str(repo)}  # this checkout's code, whatever the venv points to
    subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
        seconds.append(time.perf_counter() - started)
    return tuple(seconds)


def target_met(start: CliStart) -> bool:
    return start.median_s < TARGET_S


def subsection_markdown(start: CliStart) -> str:
    mark = "PASS" if target_met(start) else "FAIL"
    lines = [
        f"### {SUBSECTION}",
        "",
        start.stamp_line(),
        "",
        f"`{' '.join(['python', *openforge_argv('--help')[1:]])}` in a fresh interpreter, {len(start.runs_s)} runs "
        f"one after another (after one untimed run), from the call to the process's exit: median "
        f"{start.median_s:.3f} s (fastest {min(start.runs_s):.3f} s, slowest {max(start.runs_s):.3f} s). "
        "For scale, timed the same way: "
        + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in start.floors_s.items())
        + ".",
        "",
        f"- **{mark}** `openforge --help` answers in under {TARGET_S} s (median).",
    ]
    return "\n".join(lines) + "\n"


def terminal_line(start: CliStart) -> str:
    mark = "PASS" if target_met(start) else "FAIL"
    return f"cold `openforge --help`: median {start.median_s:.3f} s over {len(start.runs_s)} runs ({mark}: target {TARGET_S} s)"
