"""The golden file against vLLM's own parsers, live: the script that records it, run in the
vLLM venv `make test` builds (``make vllm``), must write the same outputs again, and our
parsers must agree with them. Its own file, named for vLLM, so the suite's
scheduler runs it after the installs it waits for (tests/_scheduling.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests._missing import missing
from tests._vllm import vllm_python
from tests.components.core.parsers.test_formats import CASES, GOLDEN, ours

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "record_vllm_parser_outputs.py"


@pytest.mark.slow
@pytest.mark.timeout(900)  # waits for the background vLLM install, then one import of vLLM (~1 min)
def test_live_vllm_agrees_with_the_golden(tmp_path: Path) -> None:
    python, why = vllm_python()
    if python is None:
        missing(why)
    out = tmp_path / "outputs.json"
    subprocess.run([python, str(SCRIPT), "--out", str(out)], check=True, timeout=600)
    live = json.loads(out.read_text())["outputs"]
    assert live == GOLDEN
    assert all(ours(case) == live[case["id"]] for case in CASES["cases"])
