"""Overlapped iterations (`algorithm.max_staleness: 1`) through `openforge run` and the compiled
manifest, with stand-in steps (fake_openforge.py): which checkpoint each iteration samples,
that every batch is trained once, and that a failed run resumes without duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from pipelines.executor import WorkflowFailed
from pipelines.state import read_state
from tests.pipelines.test_run import _config, _run

ROLLOUT_IDS = ["alpha-s0", "alpha-s1", "beta-s0", "beta-s1"]


@pytest.fixture
def step_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "steps.log"
    monkeypatch.setenv("FAKE_OPENFORGE_LOG", str(log))
    return log


def _overlapped(tmp_path: Path, tracking_uri: str, name: str, iterations: int) -> ExperimentConfig:
    config = _config(tmp_path, {"uri": f"file://{tmp_path / 'store'}"}, tracking_uri, name)
    algorithm = config.algorithm.model_copy(update={"max_staleness": 1})
    return config.model_copy(update={"iterations": iterations, "algorithm": algorithm})


def _rollouts(lines: list[str], iteration: int) -> list[str]:
    return sorted(line.split()[2] for line in lines if line.startswith(f"rollout {iteration} "))


@pytest.mark.slow
def test_overlapped_iterations_sample_the_previous_checkpoint_and_train_each_batch_once(
    tmp_path: Path, step_log: Path, tracking_uri: str
) -> None:
    config = _overlapped(tmp_path, tracking_uri, "overlap", iterations=3)
    store, layout = open_store(config.storage.uri), RunLayout("overlap")
    logged, output = _run(config, tmp_path)
    lines = step_log.read_text().splitlines()
    assert read_state(store, layout).last_committed_iteration == 2
    # Iteration k+1 samples checkpoint k (iteration 0 the initial policy), and says so in every outcome.
    assert [line for line in lines if line.startswith("serve ")] == ["serve 0 v0", "serve 1 v0", "serve 2 v1"]
    for iteration, version in ((0, "0"), (1, "0"), (2, "1")):
        assert _rollouts(lines, iteration) == ROLLOUT_IDS
        for rollout_id in ROLLOUT_IDS:
            outcome = json.loads(store.get_bytes(layout.outcome(iteration, rollout_id)))
            assert outcome["extra"]["policy_version"] == version
    # Iteration k+1's rollouts ran inside iteration k's workflow (the overlap), before k+1 was prepared.
    assert lines.index("serve 1 v0") < lines.index("prepare 1 pending")
    assert lines.index("serve 2 v1") < lines.index("prepare 2 pending")
    # Every batch trained once; the last iteration sampled nothing past the run's end.
    assert [lines.count(f"train {k}") for k in range(3)] == [1, 1, 1]
    assert _rollouts(lines, 3) == [] and not store.exists(layout.plan(3))
    assert sorted(logged) == [0, 1, 2]
    # The log says which rollouts are the next iteration's.
    assert "it 0 · generate-next.rollout (4 rollouts): running" in output


@pytest.mark.slow
def test_an_overlapped_run_that_failed_resumes_without_duplicates(
    tmp_path: Path, step_log: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _overlapped(tmp_path, tracking_uri, "overlap-resume", iterations=3)
    store, layout = open_store(config.storage.uri), RunLayout("overlap-resume")
    monkeypatch.setenv("FAKE_FAIL_TRAIN", "1")  # iteration 1's train fails once, while iteration 2 samples
    with pytest.raises(WorkflowFailed, match="train"):
        _run(config, tmp_path)
    assert read_state(store, layout).last_committed_iteration == 0
    _run(config, tmp_path)
    lines = step_log.read_text().splitlines()
    for iteration in range(3):
        assert _rollouts(lines, iteration) == ROLLOUT_IDS, f"iteration {iteration} sampled twice or not at all"
        assert lines.count(f"train {iteration}") == 1 and lines.count(f"commit {iteration}") == 1
    # The resumed iteration 2 finished on the checkpoint its first rollouts sampled.
    assert [line for line in lines if line.startswith("serve 2 ")] in (["serve 2 v1"], ["serve 2 v1", "serve 2 v1"])
    assert read_state(store, layout).last_committed_iteration == 2
