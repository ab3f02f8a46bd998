"""The exit hook: how a workflow run ended, recorded in the experiment's MLflow run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.storage import RunLayout, open_store
from components.core.tracking import ExperimentTracker
from pipelines.run_status import TAG_COMMITTED, TAG_STATUS, TAG_WORKFLOW, record_run_status
from pipelines.state import RunState, write_state


def _config(tmp_path: Path, tracking_uri: str, name: str) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {"name": name, "tasks": {"source": "x"}, "storage": {"uri": f"file://{tmp_path / 'store'}"}, "tracking": {"uri": tracking_uri}}
    )


def test_each_ending_is_tagged_and_kept_per_workflow(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri, "status-tags")
    record_run_status(config, "status-tags-continual-1700000000", "Failed")
    write_state(open_store(config.storage.uri), RunLayout(config.name), RunState(last_committed_iteration=3, checkpoint=4))
    record_run_status(config, "status-tags-continual-1700003600", "Succeeded")

    tracker = ExperimentTracker(config.tracking, config.name)
    tags = tracker.client.get_run(tracker.run_id).data.tags
    assert (tags[TAG_WORKFLOW], tags[TAG_STATUS], tags[TAG_COMMITTED]) == ("status-tags-continual-1700003600", "Succeeded", "3")
    kept = {a.path for a in tracker.client.list_artifacts(tracker.run_id, "workflows")}
    assert kept == {f"workflows/status-tags-continual-170000{s}.json" for s in ("0000", "3600")}
    failed = tracker.client.download_artifacts(tracker.run_id, "workflows/status-tags-continual-1700000000.json", str(tmp_path))
    record = json.loads(Path(failed).read_text())
    assert record["status"] == "Failed" and record["last_committed_iteration"] is None


def test_an_unknown_status_is_refused(tmp_path: Path, tracking_uri: str) -> None:
    with pytest.raises(ValueError, match="Succeeded, Failed, Error"):
        record_run_status(_config(tmp_path, tracking_uri, "status-bad"), "w", "Done")


def test_record_status_command_reads_the_config_from_the_environment(tmp_path: Path, tracking_uri: str) -> None:
    from pipelines.cli import app

    config = _config(tmp_path, tracking_uri, "status-cli")
    env = {CONFIG_ENV: yaml.safe_dump(config.model_dump(mode="json"))}
    result = CliRunner().invoke(app, ["step", "record-status", "--workflow", "wf-1", "--status", "Error"], env=env)
    assert result.exit_code == 0, result.output
    assert "wf-1: Error; last committed iteration: none" in result.output
