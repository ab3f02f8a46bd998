"""The shipped quickstart as a whole-iteration test runs it: its tasks by absolute path, its
store and MLflow database in the test's folder."""

from __future__ import annotations

from pathlib import Path

from components.core.config import ExperimentConfig, load_config

REPO = Path(__file__).resolve().parents[2]


def local_quickstart(tmp_path: Path, iterations: int) -> ExperimentConfig:
    """examples/quickstart.yaml for ``iterations`` iterations, writing only under ``tmp_path``; a private copy."""
    config = load_config(REPO / "examples" / "quickstart.yaml").model_copy(deep=True)
    config.iterations = iterations
    config.tasks.source = str(REPO / "examples" / "tasks" / "quickstart")
    config.storage.uri = f"file://{tmp_path / 'store'}"
    config.tracking.uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return config
