"""``openforge report`` on a real quickstart iteration, as a subprocess, against what its store holds."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from components.core.config import load_config

REPO = Path(__file__).resolve().parents[3]
OPENFORGE = Path(sys.executable).with_name("openforge")


def _config(uri: str, folder: Path) -> Path:
    config = load_config(REPO / "examples" / "quickstart.yaml")
    config.storage.uri, config.tasks.source = uri, str(REPO / "examples" / "tasks" / "quickstart")
    path = folder / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    return path


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(OPENFORGE), "report", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_the_report_adds_up_what_the_quickstart_store_holds(quickstart_store: tuple[str, Path], tmp_path: Path) -> None:
    uri, _ = quickstart_store
    store = Path(uri.removeprefix("file://"))
    iteration = store / "quickstart" / "iterations" / "0"
    records = [json.loads(p.read_text()) for p in sorted((iteration / "costs").glob("*.json"))]
    metrics = json.loads((iteration / "metrics.json").read_text())

    done = _report(str(_config(uri, tmp_path)), "--json", "--gpu-hour", "2", "--cpu-hour", "0.5",
                   "--scale-tasks", "3000", "--scale-samples", "8", "--scale-gpus", "8")  # fmt: skip

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (billed,) = report["iterations"]
    cpu, wall, runs = defaultdict(float), defaultdict(float), defaultdict(int)
    for r in records:
        cpu[r["step"]] += r["cpu_self_s"] + r["cpu_children_s"]
        wall[r["step"]] += r["wall_s"]
        runs[r["step"]] += 1
    assert {s["step"] for s in billed["steps"]} == {"prepare", "serve", "rollout", "score", "train", "commit"}
    assert runs["rollout"] == len(list((iteration / "outcomes").glob("*.json"))) > 0
    for step in billed["steps"]:
        name = step["step"]
        assert (step["runs"], step["gpus"], step["gpu_s"]) == (runs[name], 0, 0)  # the quickstart runs on CPU
        assert step["cpu_s"] == pytest.approx(cpu[name]) and step["wall_s"] == pytest.approx(wall[name])
        assert step["cost"] == pytest.approx(cpu[name] / 3600 * 0.5)
    assert wall["serve"] > 0 and cpu["rollout"] > 0 and cpu["train"] > 0
    assert billed["tokens_trained"] == metrics["batch/trained_tokens"] > 0
    assert billed["tokens_sampled"] == metrics["tokens/sampled"]
    assert billed["cost"] == pytest.approx(sum(cpu.values()) / 3600 * 0.5)
    assert billed["cost_per_trained_token"] == pytest.approx(billed["cost"] / metrics["batch/trained_tokens"])
    assert billed["rollouts_without_record"] == 0 and billed["steps_without_record"] == billed["unreadable"] == []
    assert report["notes"] == []
    scaled = report["extrapolation"]
    assert scaled["rollouts"] == 24000 and scaled["scale"]["gpus"] == 8
    assert scaled["gpu_s"] == pytest.approx(8 * (scaled["serve_wall_s"] + scaled["train_wall_s"]))
    assert f"measured R = {runs['rollout']}" in scaled["formulas"][0]


def test_the_table_shows_the_formula_and_a_store_without_records_says_what_to_do(
    quickstart_store: tuple[str, Path], tmp_path: Path
) -> None:
    uri, _ = quickstart_store

    table = _report(str(_config(uri, tmp_path)), "--scale-tasks", "100")
    empty = _report(str(_config(f"file://{tmp_path / 'empty'}", tmp_path)))

    assert table.returncode == 0, table.stderr
    assert "GPU-s/3600 x gpu_hour" in table.stdout and "R' = tasks x samples = 100 x 4" in table.stdout
    assert empty.returncode == 1
    assert "holds no cost records" in empty.stderr and "openforge run CONFIG" in empty.stderr
