"""The continual-training state machine, run for real: the cron's workflow, again and again, on S3.

Each run is what the CronWorkflow creates on a schedule (its ``workflowSpec``: the
iteration template, ``iteration=next``), executed by the local executor against a moto S3
server on loopback. prepare and commit are the real steps (they hold the state machine);
serve, rollouts, score and train are stand-ins (fake_openforge.py). Runs fail midway,
resume, and repeat a committed iteration; the history must stay consistent, without a
duplicate iteration, rollout, checkpoint or metric point.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from components.core.checkpoints import committed_versions
from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, open_store
from pipelines.compile import compile_config, manifest_of_kind
from pipelines.executor import ExecutorOptions, WorkflowFailed, execute_workflow
from pipelines.state import read_state
from tests.conftest import BUCKET
from tests.pipelines.fake_openforge import write_task

FAKE = [sys.executable, str(Path(__file__).with_name("fake_openforge.py"))]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # ~220 s a test in CI on loaded cores


def _config(tmp_path: Path, storage: dict[str, Any], tracking_uri: str, name: str, iterations: int = 3) -> ExperimentConfig:
    for index, task_id in enumerate(("alpha", "beta", "gamma")):
        write_task(tmp_path / "tasks", task_id, reward=float(index % 2))
    return ExperimentConfig.model_validate(
        {
            "name": name,
            "iterations": iterations,
            "tasks": {"source": str(tmp_path / "tasks"), "per_iteration": 2},
            "rollout": {"samples_per_task": 2, "concurrency": 4},
            "storage": storage,
            "tracking": {"uri": tracking_uri},
        }
    )


def _cron_run(config: ExperimentConfig, run: int) -> list[dict[str, Any]]:
    """The Workflow the CronWorkflow would create for its ``run``-th scheduled time, plus the template."""
    docs = compile_config(config)
    cron = manifest_of_kind(docs, "CronWorkflow")
    workflow = {
        "apiVersion": cron["apiVersion"],
        "kind": "Workflow",
        "metadata": {"name": f"{cron['metadata']['name']}-{run}"},
        "spec": cron["spec"]["workflowSpec"],
    }
    return [manifest_of_kind(docs, "WorkflowTemplate"), workflow]


def _execute(manifests: list[dict[str, Any]], store: ArtifactStore, workdir: Path, **parameters: str) -> None:
    execute_workflow(
        manifests, parameters=parameters, store=store, workdir=workdir, options=ExecutorOptions(programs={"openforge": FAKE})
    )


def _mlflow_steps(tracking_uri: str, name: str, metric: str) -> list[int]:
    from components.core.tracking import ExperimentTracker
    from components.core.config import TrackingConfig

    tracker = ExperimentTracker(TrackingConfig(uri=tracking_uri), name)
    return [m.step for m in tracker.client.get_metric_history(tracker.run_id, metric)]


def test_cron_runs_that_fail_resume_and_repeat_leave_one_consistent_history(
    tmp_path: Path, s3_endpoint: str, tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "steps.log"
    monkeypatch.setenv("FAKE_OPENFORGE_LOG", str(log))
    storage = {"uri": f"s3://{BUCKET}/runs", "endpoint_url": s3_endpoint}
    config = _config(tmp_path, storage, tracking_uri, "continual")
    store, layout = open_store(storage["uri"], s3_endpoint), RunLayout(config.name)

    def run(number: int, fail: str | None = None, **parameters: str) -> bool:
        for step in ("TRAIN", "COMMIT"):
            monkeypatch.delenv(f"FAKE_FAIL_{step}", raising=False)
        if fail:
            step, iteration = fail.split(":")
            monkeypatch.setenv(f"FAKE_FAIL_{step}", iteration)
        try:
            _execute(_cron_run(config, number), store, tmp_path / "exec" / str(number), **parameters)
            return True
        except WorkflowFailed:
            return False

    assert run(1)  # iteration 0
    assert not run(2, fail="TRAIN:1")  # killed midway: rollouts and score done, no checkpoint
    assert read_state(store, layout).last_committed_iteration == 0
    assert run(3)  # resumes iteration 1 from the store
    assert run(4, iteration="1")  # a repeat of a committed iteration: nothing runs
    assert not run(5, fail="COMMIT:2")  # killed after train committed checkpoint 3
    assert read_state(store, layout).last_committed_iteration == 1
    assert run(6)  # resumes iteration 2: only the commit is left
    assert run(7, iteration="next") and read_state(store, layout).last_committed_iteration == 3

    state = read_state(store, layout)
    lines = log.read_text().splitlines()
    # Every iteration 0..3 once: one plan each, chained through the task cursor.
    plans = [json.loads(store.get_bytes(layout.plan(k))) for k in range(4)]
    assert [p["iteration"] for p in plans] == [0, 1, 2, 3]
    assert [p["task_cursor"] for p in plans[1:]] == [p["next_task_cursor"] for p in plans[:-1]]
    assert state.task_cursor == plans[-1]["next_task_cursor"] and state.checkpoint == 4
    assert committed_versions(store, layout) == [1, 2, 3, 4]
    # Each rollout ran once, however often its iteration was started.
    rollouts = [line for line in lines if line.startswith("rollout ")]
    assert len(rollouts) == len(set(rollouts)) == 4 * 4
    for k, plan in enumerate(plans):
        expected = {f"rollout {k} {r['rollout_id']}" for r in plan["rollouts"]}
        assert {line for line in rollouts if line.startswith(f"rollout {k} ")} == expected
    # The engine started once per iteration (resumed iterations had no rollout left to serve).
    assert sorted(line.split()[1] for line in lines if line.startswith("serve ")) == ["0", "1", "2", "3"]
    for step in ("train", "commit"):
        assert sorted(line for line in lines if line.startswith(f"{step} ")) == [f"{step} {k}" for k in range(4)]
    # One metric point per iteration in MLflow, and every run's ending recorded by the exit hook.
    for metric in ("reward/mean", "train/loss"):
        assert _mlflow_steps(tracking_uri, config.name, metric) == [0, 1, 2, 3]
    endings = [line.split()[-1] for line in lines if line.startswith("record-status ")]
    assert endings == ["Succeeded", "Failed", "Succeeded", "Succeeded", "Failed", "Succeeded", "Succeeded"]
    assert "prepare 1 done" in lines  # the repeat saw its iteration committed


def test_the_bounded_workflow_runs_every_iteration_once_even_when_resubmitted(
    tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "steps.log"
    monkeypatch.setenv("FAKE_OPENFORGE_LOG", str(log))
    config = _config(tmp_path, {"uri": f"file://{tmp_path / 'store'}"}, tracking_uri, "bounded", iterations=2)
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    bounded = [manifest_of_kind(compile_config(config), "Workflow")]
    _execute(bounded, store, tmp_path / "exec" / "first")
    assert read_state(store, layout).last_committed_iteration == 1
    before = log.read_text().splitlines()
    _execute(bounded, store, tmp_path / "exec" / "again")
    again = log.read_text().splitlines()[len(before) :]
    assert [line for line in again if not line.startswith(("prepare ", "record-status "))] == []
    assert [line for line in again if line.startswith("prepare ")] == ["prepare 0 done", "prepare 1 done"]
