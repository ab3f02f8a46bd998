"""scripts/gpu_smoke: the prepared GPU run stays runnable, rehearsed here with a tiny model on the CPU."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _rehearsal_vocab() -> int:
    spec = importlib.util.spec_from_file_location("gpu_smoke", REPO / "scripts" / "gpu_smoke.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.REHEARSAL_SHAPE["vocab_size"]


def test_the_shell_entry_point_parses():
    subprocess.run(["bash", "-n", str(REPO / "scripts" / "gpu_smoke.sh")], check=True)


@pytest.mark.slow
def test_rehearsal_runs_the_update_loop_stage_and_writes_its_figures(tmp_path):
    out = tmp_path / "gpu_smoke.json"
    argv = [
        sys.executable, str(REPO / "scripts" / "gpu_smoke.py"), "--out", str(out), "--work", str(tmp_path / "work"),
        "--rehearse", "--tasks", "1", "--prompt-tokens", "16", "--turn-tokens", "8", "--steps", "2",
        "--skip", "verl_trainer", "--skip", "verl_sft", "--skip", "vllm_serve",
    ]  # fmt: skip  (veRL's SFT on CPU is test_verl_sft.py's; ~50 s more here)

    subprocess.run(argv, check=True, cwd=REPO, timeout=600, capture_output=True)

    figures = json.loads(out.read_text())
    # The batch carries the policy's own logprobs: a random model is near uniform over its vocabulary.
    assert abs(figures["batch"]["mean_rollout_log_prob"] + math.log(_rehearsal_vocab())) < 1.0
    stage = figures["update_loop"]
    assert stage["status"] == "ok", stage.get("trace")
    assert stage["rows"] == 4  # one row per rollout: each second call extends the first
    assert stage["tokens_per_s"] > 0 and len(stage["step_s"]) == 2
    assert stage["loss_after"] < stage["loss_before"]
    assert {"torch", "verl", "vllm_cli"} <= set(figures["machine"])
