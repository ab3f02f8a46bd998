"""The quickstart's real iteration: its analytics.json in the store and its MLflow run holding them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.analytics import ANALYTICS, read_analytics
from components.core.storage import RunLayout, open_store


def test_the_quickstart_run_stores_and_logs_its_analytics(quickstart_store: tuple[str, Path]) -> None:
    from mlflow import MlflowClient

    from components.core.tracking import RUN_TAG, mlflow_metric_name

    uri, work = quickstart_store
    store, layout = open_store(uri), RunLayout("quickstart")
    plan = json.loads(store.get_bytes(layout.plan(0)))
    summary = read_analytics(store, layout, 0)

    assert summary is not None, f"{layout.analytics(0)} was not written by the commit step"
    assert summary.overall.rollouts == len(plan["rollouts"]) and summary.overall.unreadable == 0
    assert set(summary.by_harness) == {"reference"}
    assert set(summary.by_task) == {"count-lines", "largest-file", "say-yes", "write-hello"}
    # What the tasks' candidate turns make known: write-hello writes with `echo ... > hello.txt`
    # and never reads it back; say-yes answers at once; count-lines always runs its one command.
    write_hello = summary.by_task["write-hello"].analytics
    assert write_hello["self_verification"].mean == 0.0 and write_hello["self_verification"].n > 0
    assert summary.by_task["say-yes"].analytics["turns"].mean == 1.0
    assert summary.by_task["say-yes"].analytics["multi_step_completion"].n == 0
    assert summary.by_task["count-lines"].analytics["tool_coverage"].mean == 1.0

    client = MlflowClient(tracking_uri=f"sqlite:///{work / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("quickstart")
    (run,) = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = 'quickstart'")
    logged = {key: client.get_metric_history(run.info.run_id, key) for key in run.data.metrics if key.startswith("analytics/")}
    expected = {mlflow_metric_name(k): v for k, v in summary.metrics().items()}

    assert {f"analytics/{name}/n" for name in ANALYTICS} <= set(logged)
    assert set(expected) == set(logged)
    for key, value in expected.items():
        assert [(m.step, m.value) for m in logged[key]] == [(0, pytest.approx(value))], key
