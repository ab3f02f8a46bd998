"""What every rollout pays at start: the runner and the reference harness each start a fresh
Python per rollout, so a library they import for nothing costs CPU in every rollout of
every run (docs/harnesses.md, "Reference harness")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
_HARNESS_RUN = (
    "import runpy, tempfile\n"
    "main = runpy.run_path('components/rollout/reference_harness.py')['main']\n"
    "folder = tempfile.mkdtemp()\n"
    "assert main(['--base-url', 'http://127.0.0.1:9/v1', '--model', 'm', '--prompt', 'p', '--workspace', folder,\n"
    "             '--answer-file', folder + '/answer', '--max-retries', '0']) == 2"
)


def _modules_after(code: str) -> set[str]:
    # A fresh interpreter: this test process has long imported everything.
    run = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return set(run.stdout.split())


@pytest.mark.parametrize(
    ("what", "code", "library"),
    [
        # aiohttp serves a web task's site; a shell rollout's runner never needs it.
        ("the rollout runner", "import components.rollout.runner", "aiohttp"),
        # A whole run of the harness, to its model API error: nothing listens on port 9.
        ("the reference harness", _HARNESS_RUN, "openai"),
    ],
)
def test_a_rollout_process_does_not_import(what: str, code: str, library: str) -> None:
    loaded = sorted(m for m in _modules_after(code) if m == library or m.startswith(library + "."))
    assert not loaded, f"{what} imported {library}: {loaded[:5]}"
