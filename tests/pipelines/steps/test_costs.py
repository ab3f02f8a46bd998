"""The step command's cost hook: each iteration step's run leaves its record, and a lost record never fails a step."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
import yaml

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.storage import LocalStore, RunLayout, StorageError
from components.costs.keys import cost_record_key
from components.costs.record import CostRecord
from pipelines.steps._costs import COST_FILE, run_step
from pipelines.steps._spec import Flag, StepSpec, iteration_flag


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _spec(name: str, body, *more_flags: str, **declared) -> StepSpec:
    flags = (iteration_flag("k"), *(Flag(f, str, f) for f in more_flags))
    return StepSpec(name=name, summary="test", calls="x:y", run=body, flags=flags, **declared)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExperimentConfig:
    config = ExperimentConfig(
        name="costs",
        tasks={"source": str(tmp_path)},
        storage={"uri": f"file://{tmp_path / 'store'}"},
        engine={"kind": "vllm", "vllm": {"tensor_parallel_size": 2}},
        cluster={"resources": {"serve": {"cpu": "4", "memory": "32Gi", "gpu": 2}}},
    )
    monkeypatch.setenv(CONFIG_ENV, yaml.safe_dump(config.model_dump(mode="json", exclude_none=True)))
    return config


def _stored(tmp_path: Path, key: str) -> CostRecord:
    return CostRecord.model_validate_json(LocalStore(tmp_path / "store").get_bytes(key))


def test_a_step_run_records_its_wall_cpu_children_and_gpus(config, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # the two GPUs vLLM is told to span

    def body(iteration: int) -> None:
        _busy(0.3)
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"], check=True)

    run_step(_spec("serve", body), {"iteration": 4})

    record = _stored(tmp_path, cost_record_key(RunLayout("costs"), 4, "serve"))
    assert (record.step, record.iteration, record.part, record.exit_code) == ("serve", 4, None, 0)
    assert record.cpu_self_s >= 0.3 and record.cpu_children_s >= 0.3
    assert record.wall_s >= 0.6 and record.ended_at - record.started_at == pytest.approx(record.wall_s, abs=0.05)
    assert record.gpus == 2 and record.gpu_s == pytest.approx(2 * record.wall_s)


def test_an_engine_with_no_gpu_to_see_holds_none(config) -> None:
    from components.costs.record import held_gpus

    # vLLM's CPU build, or a GPU config run where there is none: the allocation is what is seen.
    assert held_gpus(config, "serve", visible=0) == 0
    assert held_gpus(config, "serve", visible=8) == 2


def test_a_step_that_exits_is_recorded_with_its_code_and_still_exits(config, tmp_path) -> None:
    def body(iteration: int) -> None:
        raise typer.Exit(3)

    with pytest.raises(typer.Exit):
        run_step(_spec("train", body), {"iteration": 1})

    record = _stored(tmp_path, cost_record_key(RunLayout("costs"), 1, "train"))
    assert record.exit_code == 3 and record.gpus == 0  # the CPU trainer holds no GPU


def test_a_step_without_a_store_leaves_its_record_in_its_folder(config, tmp_path) -> None:
    out = tmp_path / "out"

    run_step(_spec("rollout", lambda iteration, rollout_id, out: None, "rollout_id", "out", cost_part="rollout_id", cost_dir="out"),
             {"iteration": 2, "rollout_id": "hello-s1", "out": str(out)})  # fmt: skip

    record = CostRecord.model_validate(json.loads((out / COST_FILE).read_text()))
    assert (record.step, record.part, record.iteration) == ("rollout", "hello-s1", 2)
    assert not (tmp_path / "store").exists()  # the executor uploads it, not the pod


def test_a_store_that_refuses_the_record_does_not_fail_the_step(config, tmp_path, monkeypatch, capsys) -> None:
    def refuse(self, key, data):
        raise StorageError(f"writing {key} failed: disk full")

    monkeypatch.setattr(LocalStore, "put_bytes", refuse)
    ran = []

    run_step(_spec("score", lambda iteration: ran.append(iteration)), {"iteration": 0})

    assert ran == [0]
    assert "warning: score wrote no cost record (StorageError: writing costs/iterations/0/costs/score.json failed" in capsys.readouterr().err


def test_prepare_records_the_iteration_it_resolved(config, tmp_path) -> None:
    run_step(_spec("prepare", lambda iteration: 7), {"iteration": "next"})

    assert _stored(tmp_path, cost_record_key(RunLayout("costs"), 7, "prepare")).iteration == 7
