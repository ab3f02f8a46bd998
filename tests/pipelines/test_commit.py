"""The commit step: metrics to MLflow once per iteration, state.json last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.metrics import merge_metrics
from components.core.storage import RunLayout, open_store
from components.core.tracking import CONFIG_ARTIFACT, REWARD_PLOT, SUMMARY_ARTIFACT, ExperimentTracker
from pipelines.commit import CommitError, commit_iteration
from pipelines.state import read_state


def _config(tmp_path: Path, tracking_uri: str, name: str) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": name,
            "tasks": {"source": str(tmp_path / "tasks")},
            "storage": {"uri": f"file://{tmp_path / 'store'}"},
            "tracking": {"uri": tracking_uri},
        }
    )


def _trained(config: ExperimentConfig, iteration: int, reward: float) -> None:
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    plan = {"iteration": iteration, "task_cursor": 3 * iteration, "next_task_cursor": 3 * iteration + 3}
    store.put_bytes(layout.plan(iteration), json.dumps(plan).encode())
    merge_metrics(store, layout.metrics(iteration), {"reward/mean": reward, "pass@1": reward, "pass^k": 0.0})
    merge_metrics(store, layout.metrics(iteration), {"train/loss": 0.3})
    store.put_bytes(layout.checkpoint_marker(iteration + 1), b"")


def test_commit_twice_logs_one_value_per_iteration_and_writes_state(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri, "commit-twice")
    _trained(config, 0, reward=0.25)
    commit_iteration(config, 0, "name: commit-twice\n")
    # A rerun (e.g. an Argo retry) after the metrics file changed must not add a second point.
    merge_metrics(open_store(config.storage.uri), RunLayout(config.name).metrics(0), {"reward/mean": 0.9})
    state = commit_iteration(config, 0, "name: commit-twice\n")
    assert state.model_dump() == {"last_committed_iteration": 0, "checkpoint": 1, "task_cursor": 3}
    tracker = ExperimentTracker(config.tracking, config.name)
    history = tracker.client.get_metric_history(tracker.run_id, "reward/mean")
    assert [(m.step, m.value) for m in history] == [(0, 0.25)]
    logged = tracker.logged()[0]
    analytics = {k for k in logged if k.startswith(("analytics/", "tool_calls/"))}  # docs/analytics.md, tested there
    assert {k: v for k, v in logged.items() if k not in analytics} == {
        "reward/mean": 0.25, "pass_at_1": 0.25, "pass_all_k": 0.0, "train/loss": 0.3,
    }  # fmt: skip
    assert "analytics/turns/n" in analytics
    artifacts = {a.path for a in tracker.client.list_artifacts(tracker.run_id)}
    assert {CONFIG_ARTIFACT, SUMMARY_ARTIFACT, "plots"} <= artifacts
    assert [a.path for a in tracker.client.list_artifacts(tracker.run_id, "plots")] == [REWARD_PLOT]


def test_commit_refuses_an_iteration_without_a_committed_checkpoint(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri, "commit-early")
    with pytest.raises(CommitError, match="checkpoint 1 is not committed"):
        commit_iteration(config, 0, "")
    assert read_state(open_store(config.storage.uri), RunLayout(config.name)) is None


def test_commit_command_reads_the_config_from_the_environment(tmp_path: Path, tracking_uri: str) -> None:
    from pipelines.cli import app

    config = _config(tmp_path, tracking_uri, "commit-cli")
    _trained(config, 0, reward=1.0)
    text = yaml.safe_dump(config.model_dump(mode="json"))
    result = CliRunner().invoke(app, ["step", "commit", "--iteration", "0"], env={CONFIG_ENV: text})
    assert result.exit_code == 0, result.output
    assert read_state(open_store(config.storage.uri), RunLayout(config.name)).checkpoint == 1
    missing = CliRunner().invoke(app, ["step", "commit", "--iteration", "0"], env={CONFIG_ENV: ""})
    assert missing.exit_code == 2 and CONFIG_ENV in missing.output


def test_commit_moves_the_task_cursor_to_where_the_plan_left_it(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri, "commit-cursor")
    for iteration in (0, 1):
        _trained(config, iteration, reward=0.5)
        state = commit_iteration(config, iteration, "")
    assert (state.last_committed_iteration, state.checkpoint, state.task_cursor) == (1, 2, 6)


def test_commit_refuses_to_leave_a_gap_in_the_history(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri, "commit-gap")
    _trained(config, 1, reward=0.5)
    with pytest.raises(CommitError, match="before iteration 0"):
        commit_iteration(config, 1, "")
    assert read_state(open_store(config.storage.uri), RunLayout(config.name)) is None
