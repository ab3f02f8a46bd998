"""MLflow tracking: one run per experiment, metrics logged once per iteration, the plot."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from components.core.config import TrackingConfig
from components.core.tracking import REWARD_PLOT, ExperimentTracker, mlflow_metric_name, ui_command


@pytest.fixture(scope="module")
def tracking(tmp_path_factory: pytest.TempPathFactory) -> TrackingConfig:
    # One sqlite store for the module: creating its tables takes seconds.
    return TrackingConfig(uri=f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'sub' / 'mlflow.db'}")


def test_contract_metric_names_become_names_mlflow_accepts() -> None:
    assert mlflow_metric_name("pass@1") == "pass_at_1"
    assert mlflow_metric_name("pass@k") == "pass_at_k"
    assert mlflow_metric_name("pass^k") == "pass_all_k"
    assert mlflow_metric_name("rollout_time_s/p95") == "rollout_time_s/p95"


def test_a_second_tracker_for_the_same_experiment_reuses_its_run(tracking: TrackingConfig) -> None:
    first = ExperimentTracker(tracking, "reuse")
    first.log_iteration(0, {"reward/mean": 0.1})
    second = ExperimentTracker(tracking, "reuse")
    assert second.run_id == first.run_id
    assert second.log_iteration(0, {"reward/mean": 0.7, "train/loss": 2.0}) == ["train/loss"]
    assert second.log_iteration(1, {"reward/mean": 0.7}) == ["reward/mean"]
    assert second.logged() == {0: {"reward/mean": 0.1, "train/loss": 2.0}, 1: {"reward/mean": 0.7}}


def test_reward_plot_is_logged_as_a_png_next_to_the_database(tracking: TrackingConfig, tmp_path: Path) -> None:
    tracker = ExperimentTracker(tracking, "plot")
    for step, reward in enumerate((0.1, 0.4, 0.6)):
        tracker.log_iteration(step, {"reward/mean": reward, "pass@1": reward / 2})
    tracker.log_reward_plot()
    local = Path(tracker.client.download_artifacts(tracker.run_id, REWARD_PLOT, str(tmp_path)))
    assert local.read_bytes().startswith(b"\x89PNG")
    db_dir = Path(tracking.uri.removeprefix("sqlite:///")).parent
    assert (db_dir / "mlartifacts").is_dir()


def test_ui_command_names_an_absolute_database_or_the_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert ui_command("sqlite:///.openforge/mlflow.db") == f"mlflow ui --backend-store-uri sqlite:///{tmp_path}/.openforge/mlflow.db"
    assert ui_command("http://127.0.0.1:5000") == "open http://127.0.0.1:5000"
    served = ui_command("sqlite:///.openforge/mlflow.db", "http://127.0.0.1:5123")  # tracking.ui_url
    assert served.endswith("mlflow.db --host 127.0.0.1 --port 5123")


@pytest.mark.parametrize("field", ["viewer_url", "ui_url"])
@pytest.mark.parametrize("value", ["127.0.0.1:8585", "http://127.0.0.1", "ftp://h:1"])
def test_the_ui_addresses_must_be_http_with_a_port(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match=f"tracking.{field} .* must be http\\(s\\)://HOST:PORT"):
        TrackingConfig(**{field: value})
    assert TrackingConfig(**{field: "http://10.0.0.5:9000/"}).model_dump()[field] == "http://10.0.0.5:9000"
