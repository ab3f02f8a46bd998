"""Experiment tracking in MLflow: one run per experiment, each iteration's metrics logged once.

Reruns and resumed runs find the experiment's run again by its tag and log only the
metrics an iteration does not have yet, so MLflow never holds two values for one
(metric, iteration). MLflow is imported inside the tracker: it is slow to import and
most commands never track anything.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from components.core.config import TrackingConfig

if TYPE_CHECKING:
    from components.core.rollout_traces import SpanPlan

RUN_TAG = "openforge.experiment"
CONFIG_ARTIFACT = "config.yaml"
SUMMARY_ARTIFACT = "summary.json"
REWARD_PLOT = "plots/reward_by_iteration.png"
_INVALID = re.compile(r"[^\w\-. :/]")


def mlflow_metric_name(name: str) -> str:
    """The MLflow name of a metric: MLflow refuses '@' and '^' (pass@k -> pass_at_k, pass^k -> pass_all_k)."""
    return _INVALID.sub("_", name.replace("@", "_at_").replace("^", "_all_"))


def eval_run_name(name: str, eval_id: str) -> str:
    """An evaluation's MLflow run (and its tag value): one per evaluation id."""
    return f"{name}-eval-{eval_id}"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI; None for any other kind."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def ui_command(tracking_uri: str, ui_url: str | None = None) -> str:
    """How to see the metrics: the MLflow UI command for a local store (runs from any directory),
    serving at ``ui_url`` (``tracking.ui_url``) when given."""
    if tracking_uri.startswith(("http://", "https://")):
        return f"open {tracking_uri}"  # a tracking server is its own UI
    db = sqlite_path(tracking_uri)
    uri = f"sqlite:///{db.resolve()}" if db is not None else tracking_uri
    if ui_url is None:
        return f"mlflow ui --backend-store-uri {uri}"
    served = urlsplit(ui_url)
    return f"mlflow ui --backend-store-uri {uri} --host {served.hostname} --port {served.port}"


class ExperimentTracker:
    """The MLflow run of one experiment (found by tag, created on first use)."""

    def __init__(self, tracking: TrackingConfig, run_name: str, experiment: str | None = None) -> None:
        """``experiment``: the MLflow experiment when it is not the run's own name (an evaluation's run)."""
        # The run is offline by design: no usage reports leave this machine.
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        from mlflow import MlflowClient

        db = sqlite_path(tracking.uri)
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)
        self.uri = tracking.uri
        self.client = MlflowClient(tracking_uri=tracking.uri)
        self.experiment_id = self._experiment_id(tracking.experiment or experiment or run_name, db)
        self.run_id = self._run_id(self.experiment_id, run_name)

    def _experiment_id(self, name: str, db: Path | None) -> str:
        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        # Next to the sqlite file, not MLflow's default ./mlruns in whatever the CWD is.
        location = (db.resolve().parent / "mlartifacts").as_uri() if db is not None else None
        return self.client.create_experiment(name, artifact_location=location)

    def _run_id(self, experiment_id: str, run_name: str) -> str:
        runs = self.client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{RUN_TAG}` = '{run_name}'",
            order_by=["attributes.start_time ASC"],
            max_results=1,
        )
        if runs:
            return runs[0].info.run_id
        return self.client.create_run(experiment_id, run_name=run_name, tags={RUN_TAG: run_name}).info.run_id

    def logged(self) -> dict[int, dict[str, float]]:
        """Every logged value, by iteration (step) and MLflow metric name."""
        by_step: dict[int, dict[str, float]] = {}
        for key in self.client.get_run(self.run_id).data.metrics:
            for metric in self.client.get_metric_history(self.run_id, key):
                by_step.setdefault(metric.step, {})[key] = metric.value
        return dict(sorted(by_step.items()))

    def log_iteration(self, iteration: int, metrics: Mapping[str, float]) -> list[str]:
        """Log the metrics iteration ``iteration`` does not have yet; return their MLflow names."""
        from mlflow.entities import Metric

        have = self.logged().get(iteration, {})
        now = int(time.time() * 1000)
        new = {mlflow_metric_name(k): float(v) for k, v in metrics.items()}
        batch = [Metric(k, v, now, iteration) for k, v in sorted(new.items()) if k not in have]
        if batch:
            self.client.log_batch(self.run_id, metrics=batch)
        return [m.key for m in batch]

    def log_text(self, text: str, artifact_file: str) -> None:
        """Write ``text`` as an artifact (replacing an earlier one of the same name)."""
        self.client.log_text(self.run_id, text, artifact_file)

    def log_summary(self) -> None:
        """The per-iteration metrics as one JSON artifact."""
        self.log_text(json.dumps(self.logged(), indent=2, sort_keys=True), SUMMARY_ARTIFACT)

    def log_reward_plot(self) -> None:
        """Plot mean reward (and pass@1) by iteration and log it, replacing the previous plot."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        logged = self.logged()
        figure = Figure(figsize=(6, 3.5))
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        for name in ("reward/mean", "pass@1"):
            key = mlflow_metric_name(name)
            points = [(step, values[key]) for step, values in logged.items() if key in values]
            if points:
                axes.plot(*zip(*points), marker="o", label=name)
        axes.set_xlabel("iteration")
        axes.set_ylabel("value")
        axes.set_title("Reward by iteration")
        axes.grid(alpha=0.3)
        if axes.get_legend_handles_labels()[0]:
            axes.legend()
        figure.tight_layout()
        self.client.log_figure(self.run_id, figure, REWARD_PLOT)

    def log_rollout_traces(self, traces: Mapping[str, "SpanPlan"], iteration: int) -> int:
        """Each rollout of ``iteration`` as a trace linked to the run (rollout_traces.py); how many were new."""
        from components.core.rollout_traces import log_rollout_traces

        return log_rollout_traces(self.client, self.experiment_id, self.run_id, iteration, dict(traces))

    def finish(self) -> None:
        """Mark the run finished (a later resume keeps logging to it)."""
        self.client.set_terminated(self.run_id, "FINISHED")
