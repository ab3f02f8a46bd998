"""`openforge --help` answers at once: it loads typer and each command's thin door, none of
the libraries the commands use (torch, aiohttp, MLflow, Hera, the config's pydantic models)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_MARK = "--- modules ---"
# A fresh interpreter: this test process has long imported everything.
_HELP_THEN_MODULES = textwrap.dedent(f"""
    import sys
    from pipelines.cli import app
    try:
        app(["--help"], prog_name="openforge")
    except SystemExit:
        pass
    print({_MARK!r})
    print("\\n".join(sorted(sys.modules)))
""")

HEAVY = ("torch", "transformers", "aiohttp", "mlflow", "verl", "hera", "boto3", "fastapi", "numpy")
# The experiment config and what it pulls in; a command loads it when it reads a config.
CONFIG = ("components.core.config", "pydantic", "yaml")


@pytest.fixture(scope="module")
def help_modules() -> set[str]:
    run = subprocess.run(
        [sys.executable, "-c", _HELP_THEN_MODULES], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    shown, _, modules = run.stdout.partition(_MARK)
    assert "Usage: openforge" in shown, run.stdout + run.stderr
    return set(modules.split())


@pytest.mark.parametrize("library", [*HEAVY, *CONFIG])
def test_help_does_not_import(library: str, help_modules: set[str]) -> None:
    loaded = sorted(m for m in help_modules if m == library or m.startswith(library + "."))
    assert not loaded, f"`openforge --help` imported {library}: {loaded[:5]}"
