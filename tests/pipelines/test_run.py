"""`openforge run` over the compiled iteration manifest, with stand-in steps (fake_openforge.py).

The manifest is the real one (`compile_config`); only the program inside the images is
replaced, so these tests check the contract between the compiler and the executor
(paths, ports, artifacts, fan-out, daemon, sidecar), the iteration chaining, resume and
the MLflow metrics, in seconds.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, open_store
from pipelines.executor import WorkflowFailed
from pipelines.run import RunError, run_experiment
from pipelines.state import read_state
from tests.pipelines.fake_openforge import write_task

FAKE = [sys.executable, str(Path(__file__).with_name("fake_openforge.py"))]


def _config(tmp_path: Path, storage: dict, tracking_uri: str, name: str) -> ExperimentConfig:
    for task_id, reward in (("alpha", 1.0), ("beta", 0.0)):
        write_task(tmp_path / "tasks", task_id, reward)
    return ExperimentConfig.model_validate(
        {
            "name": name,
            "iterations": 2,
            "tasks": {"source": str(tmp_path / "tasks")},
            "rollout": {"samples_per_task": 2, "concurrency": 2},
            "storage": storage,
            "tracking": {"uri": tracking_uri},
        }
    )


def _run(config: ExperimentConfig, tmp_path: Path, **kwargs) -> tuple[dict, str]:
    # Plain processes: the fake rollout asks its serve step directly, where a sandboxed pod
    # reaches the engine only through its proxy sidecar's channel (tests/e2e/test_sandbox_runtime.py).
    kwargs.setdefault("runtime", "process")
    out = io.StringIO()
    logged = run_experiment(
        config, console=Console(file=out, width=140), workdir=tmp_path / ".openforge", programs={"openforge": FAKE}, **kwargs
    )
    return logged, out.getvalue()


@pytest.fixture
def step_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "steps.log"
    monkeypatch.setenv("FAKE_OPENFORGE_LOG", str(log))
    return log


def _mlflow_history(tracking_uri: str, name: str, metric: str) -> list[tuple[int, float]]:
    from mlflow import MlflowClient

    from components.core.tracking import RUN_TAG

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(name)
    (run,) = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{name}'")
    return sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, metric))


@pytest.mark.slow
def test_run_chains_iterations_each_serving_the_last_committed_checkpoint(
    tmp_path: Path, step_log: Path, tracking_uri: str
) -> None:
    storage = {"uri": f"file://{tmp_path / 'store'}"}
    config = _config(tmp_path, storage, tracking_uri, "chain")
    store = open_store(storage["uri"])
    logged, output = _run(config, tmp_path)
    layout = RunLayout("chain")
    assert read_state(store, layout).model_dump() == {"last_committed_iteration": 1, "checkpoint": 2, "task_cursor": 4}
    lines = step_log.read_text().splitlines()
    assert "serve 0 v0" in lines and "serve 1 v1" in lines
    outcome = json.loads(store.get_bytes(layout.outcome(1, "alpha-s1")))
    assert outcome["extra"] == {"policy_version": "1", "trajectory_seen": True}
    assert store.exists(layout.trajectory(1, "alpha-s1"))
    assert _mlflow_history(tracking_uri, "chain", "reward/mean") == [(0, 0.5), (1, 0.5)]
    assert _mlflow_history(tracking_uri, "chain", "pass_at_1") == [(0, 0.5), (1, 0.5)]
    assert sorted(logged) == [0, 1] and logged[1]["train/loss"] == 0.5
    # The commit step logs the train step's metrics.json: what the update trained on reaches MLflow.
    assert _mlflow_history(tracking_uri, "chain", "batch/trained_tokens") == [(0, 96.0), (1, 192.0)]
    assert "mlflow ui --backend-store-uri sqlite:///" in output
    assert "Iterations" in output and "trained" in output and "192" in output


@pytest.mark.slow
def test_rerun_after_a_failed_iteration_resumes_without_duplicates(
    tmp_path: Path,
    step_log: Path,
    tracking_uri: str,
    storage_settings: dict,
    any_store: ArtifactStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = f"resume-{any_store.root.split(':')[0]}"
    config = _config(tmp_path, storage_settings, tracking_uri, name).model_copy(update={"iterations": 1})
    monkeypatch.setenv("FAKE_FAIL_TRAIN", "0")
    with pytest.raises(WorkflowFailed, match="train"):
        _run(config, tmp_path)
    assert read_state(any_store, RunLayout(name)) is None
    _run(config, tmp_path)
    lines = step_log.read_text().splitlines()
    rollouts = sorted(line for line in lines if line.startswith("rollout 0 "))
    assert rollouts == ["rollout 0 alpha-s0", "rollout 0 alpha-s1", "rollout 0 beta-s0", "rollout 0 beta-s1"]
    assert lines.count("score 0") == 1 and lines.count("train 0") == 1 and lines.count("commit 0") == 1
    assert read_state(any_store, RunLayout(name)).last_committed_iteration == 0
    for metric in ("reward/mean", "train/loss", "rollouts/ok"):
        assert [step for step, _ in _mlflow_history(tracking_uri, name, metric)] == [0]
    # Everything committed: a third run starts nothing and still prints the summary.
    before = len(lines)
    _, output = _run(config, tmp_path)
    assert len(step_log.read_text().splitlines()) == before
    assert "Iterations" in output


def test_a_run_whose_harness_is_not_installed_stops_before_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tracking_uri: str
) -> None:
    monkeypatch.setenv("OPENFORGE_HARNESS_HOME", str(tmp_path / "no-harnesses"))
    config = _config(tmp_path, {"uri": (tmp_path / "store").as_uri()}, tracking_uri, "uninstalled")
    config = config.model_copy(update={"harness": config.harness.model_copy(update={"name": "codex"})})

    with pytest.raises(RunError, match="openforge harness install codex"):
        run_experiment(config, console=Console(file=io.StringIO()), workdir=tmp_path / ".openforge")
    assert not (tmp_path / "store").exists()
