"""Whole RL iterations with the real steps: dev engine, proxy sidecars, reference harness,
verifiers, scoring, the CPU trainer and MLflow, on a file:// store and on S3 (moto)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from components.core.checkpoints import committed_versions
from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from pipelines.run import run_experiment
from tests._runtime import PIPELINE_RUNTIME

QUICKSTART_TASKS = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "quickstart"


def _config(tmp_path: Path, name: str, storage: dict, tracking_uri: str, iterations: int) -> ExperimentConfig:
    tasks = tmp_path / "tasks"
    for task_id in ("say-yes", "write-hello"):
        shutil.copytree(QUICKSTART_TASKS / task_id, tasks / task_id)
    return ExperimentConfig.model_validate(
        {
            "name": name,
            "iterations": iterations,
            "tasks": {"source": str(tasks)},
            "harness": {"max_turns": 2, "max_tokens": 16},
            "rollout": {"samples_per_task": 2, "concurrency": 4, "time_limit_s": 60},
            "storage": storage,
            "tracking": {"uri": tracking_uri},
        }
    )


@pytest.mark.slow
@pytest.mark.timeout(600)  # ~210 s in CI on loaded cores
@pytest.mark.parametrize(("kind", "iterations"), [("file", 2), ("s3", 1)])
def test_real_iterations_record_score_train_and_commit(
    kind: str, iterations: int, request: pytest.FixtureRequest, tmp_path: Path, tracking_uri: str
) -> None:
    if kind == "file":
        storage = {"uri": f"file://{tmp_path / 'store'}"}
    else:
        storage = {"uri": "s3://openforge-test/runs", "endpoint_url": request.getfixturevalue("s3_endpoint")}
    config = _config(tmp_path, f"e2e-{kind}", storage, tracking_uri, iterations)
    out = io.StringIO()

    logged = run_experiment(config, console=Console(file=out, width=160), workdir=tmp_path / ".openforge", runtime=PIPELINE_RUNTIME)

    store, layout = open_store(config.storage.uri, config.storage.endpoint_url), RunLayout(config.name)
    assert sorted(logged) == list(range(iterations))
    assert committed_versions(store, layout) == list(range(iterations + 1))
    assert json.loads(store.get_bytes(layout.state()))["last_committed_iteration"] == iterations - 1
    for iteration in range(iterations):
        plan = json.loads(store.get_bytes(layout.plan(iteration)))
        rollout_ids = [r["rollout_id"] for r in plan["rollouts"]]
        assert len(rollout_ids) == 4
        for rollout_id in rollout_ids:
            outcome = json.loads(store.get_bytes(layout.outcome(iteration, rollout_id)))
            assert outcome["status"] == "ok", outcome
            lines = store.get_bytes(layout.trajectory(iteration, rollout_id)).splitlines()
            calls = [RecordedCall.model_validate_json(line) for line in lines]
            assert calls and all(c.ok for c in calls)
            # Iteration k is served by checkpoint k: the proxy recorded which one answered.
            assert {c.policy_version for c in calls} == {str(iteration)}
            assert all(c.sampling.temperature == 1.0 and c.sampling.overridden for c in calls)
        assert "reward/mean" in logged[iteration] and "train/loss" in logged[iteration]
    assert "See the metrics: mlflow ui" in out.getvalue()
    # The closing table's last line compares the first and the last iteration, or says there is one.
    assert ("pass@1 rose:" in out.getvalue() or "pass@1 did not rise" in out.getvalue()) == (iterations > 1)
