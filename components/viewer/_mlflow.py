"""The link from a viewer page to the MLflow run of the same run or evaluation.

The viewer knows the tracking store only when it was started on a config; started on a
store URI it says so instead of guessing. A tracking server is its own UI; a local sqlite
or file store is linked at the address ``mlflow ui`` serves by default, with the command
that serves it.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from html import escape

from components.core.config import TrackingConfig
from components.core.tracking import RUN_TAG, eval_run_name, sqlite_path, ui_command

MLFLOW_UI_DEFAULT = "http://127.0.0.1:5000"  # where `mlflow ui` listens unless told otherwise


@dataclass(frozen=True)
class RunLink:
    url: str | None  # the MLflow run's page; None when the run is not found
    note: str  # HTML: how to open it, or why there is no link


class MlflowLinks:
    """Finds runs by the tag the tracker gives them (components/core/tracking.py); found runs are cached."""

    def __init__(self, tracking: TrackingConfig | None) -> None:
        self.tracking = tracking
        self._found: dict[str, str] = {}
        self._lock = threading.Lock()
        if tracking is not None:  # importing MLflow takes seconds: not on the first page's clock
            threading.Thread(target=_import_mlflow, name="import-mlflow", daemon=True).start()

    @property
    def ui_url(self) -> str | None:
        if self.tracking is None:
            return None
        uri = self.tracking.uri
        if self.tracking.ui_url is not None:
            return self.tracking.ui_url
        return uri.rstrip("/") if uri.startswith(("http://", "https://")) else MLFLOW_UI_DEFAULT

    def run_link(self, name: str, evaluation: str | None = None) -> RunLink:
        """The MLflow run of run ``name`` (or of its evaluation ``evaluation``)."""
        if self.tracking is None:
            return RunLink(None, "MLflow run: unknown (the viewer was started on a store URI; start it on the "
                                 "experiment's config, <code>openforge view CONFIG</code>, to link it)")  # fmt: skip
        run_name = eval_run_name(name, evaluation) if evaluation else name
        db = sqlite_path(self.tracking.uri)
        if db is not None and not db.is_file():  # MLflow would create an empty one
            return RunLink(None, f"MLflow run: none, {escape(str(db))} does not exist (its commit step logs the run)")
        try:
            with self._lock:
                path = self._found.get(run_name) or self._lookup(name, run_name)
        except Exception as exc:  # the link is an extra: the page shows without it, saying why
            return RunLink(None, f"MLflow run: could not be looked up in {escape(self.tracking.uri)} ({escape(repr(exc)[:300])})")
        serve = "" if self.tracking.uri.startswith(("http://", "https://")) else f" (served by <code>{escape(ui_command(self.tracking.uri, self.tracking.ui_url))}</code>)"
        if path is None:
            return RunLink(None, f"MLflow run: not logged yet in {escape(self.tracking.uri)}: its commit step logs it")
        url = f"{self.ui_url}/{path}"
        return RunLink(url, f'MLflow run: <a id="mlflow-run" href="{escape(url)}">{escape(run_name)}</a>{serve}')

    def _lookup(self, name: str, run_name: str) -> str | None:
        MlflowClient = _import_mlflow()

        client = MlflowClient(tracking_uri=self.tracking.uri)
        experiment = client.get_experiment_by_name(self.tracking.experiment or name)
        if experiment is None:
            return None
        runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = '{run_name}'", max_results=1)
        if not runs:
            return None
        path = f"#/experiments/{experiment.experiment_id}/runs/{runs[0].info.run_id}"
        self._found[run_name] = path
        return path


def _import_mlflow() -> type:
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # offline by design, as the tracker
    from mlflow import MlflowClient

    return MlflowClient
