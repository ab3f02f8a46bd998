"""`openforge eval`: the config an evaluation runs with, and a whole evaluation with the real steps."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from tests.pipelines._manifests import QUICKSTART, quickstart_config

from components.core.checkpoints import committed_versions
from components.core.config import ConfigError
from components.core.storage import RunLayout, open_store, run_layout
from components.core.trajectory import RecordedCall
from pipelines.evaluate import eval_config, evaluate_policy
from pipelines.run import RunError, run_experiment
from tests._runtime import PIPELINE_RUNTIME


def test_eval_config_takes_every_task_and_the_requested_policy(tmp_path: Path) -> None:
    base = quickstart_config().model_copy(update={"tasks": quickstart_config().tasks.model_copy(update={"per_iteration": 1})})
    config = eval_config(base, "3", tasks="examples/tasks/web", samples=2, eval_id="e1")
    assert (config.evaluation.id, config.evaluation.checkpoint) == ("e1", 3)
    assert (config.tasks.source, config.tasks.per_iteration) == ("examples/tasks/web", None)
    assert config.rollout.samples_per_task == 2
    folder = eval_config(base, str(tmp_path), eval_id="e2")
    assert (folder.model.path, folder.evaluation.checkpoint) == (str(tmp_path), "base")
    assert eval_config(base).evaluation.id.startswith("latest-")


def test_eval_config_refuses_what_it_cannot_serve_or_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not latest, base, a version number or a folder"):
        eval_config(quickstart_config(), str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="evaluation.id"):
        eval_config(quickstart_config(), eval_id="Not A Label")


def test_a_training_run_refuses_an_evaluation_config(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="openforge eval"):
        run_experiment(eval_config(quickstart_config(), eval_id="e3"), workdir=tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(600)  # ~180 s in CI on loaded cores
def test_eval_runs_the_quickstart_tasks_records_sessions_and_trains_nothing(tmp_path: Path, tracking_uri: str) -> None:
    from mlflow import MlflowClient

    from pipelines.eval_report import TAG_CHECKPOINT, eval_run_name

    quickstart = quickstart_config()
    config = quickstart.model_copy(
        update={
            "name": "eval-e2e",
            "harness": quickstart.harness.model_copy(update={"max_turns": 2, "max_tokens": 16}),
            "storage": quickstart.storage.model_copy(update={"uri": f"file://{tmp_path / 'store'}"}),
            "tracking": quickstart.tracking.model_copy(update={"uri": tracking_uri}),
        }
    )
    evaluation = eval_config(config, "base", samples=2, eval_id="base-e2e")
    out = io.StringIO()

    summary = evaluate_policy(evaluation, Console(file=out, width=160), workdir=tmp_path / ".openforge", runtime=PIPELINE_RUNTIME)

    # Every quickstart task, two samples each, graded by its verifier.
    task_ids = sorted(p.name for p in (QUICKSTART.parent / "tasks" / "quickstart").iterdir() if p.is_dir())
    assert [t.task_id for t in summary.tasks] == task_ids
    assert all(t.rollouts == 2 for t in summary.tasks)
    assert sum(summary.status_counts.values()) == 2 * len(task_ids)
    assert summary.status_counts["infra_error"] == 0
    assert set(summary.pass_at) == {1, 2}
    assert summary.checkpoint == {"requested": "base", "version": 0, "source": "tiny model (seed 0)"}
    store, layout = open_store(evaluation.storage.uri), run_layout(evaluation)
    assert json.loads(store.get_bytes(layout.eval_summary())) == json.loads(summary.model_dump_json())
    # Sessions are recorded as in training, under the evaluation's folder.
    trajectory = store.get_bytes(layout.trajectory(0, f"{task_ids[0]}-s0")).splitlines()
    calls = [RecordedCall.model_validate_json(line) for line in trajectory]
    assert calls and {c.policy_version for c in calls} == {"0"}
    # Nothing trained, nothing committed, the run's own folders untouched.
    run = RunLayout(config.name)
    assert committed_versions(store, run) == []
    assert not store.exists(run.state())
    assert not store.list(f"{config.name}/iterations/")
    assert not store.exists(layout.batch(0))
    logs = tmp_path / ".openforge" / "executor" / config.name / "eval-base-e2e" / "logs"
    nodes = {p.name for p in logs.iterdir()}
    assert {"prepare", "generate.serve", "score", "report"} <= nodes
    assert not nodes & {"train", "commit", "exit-handler"}
    # Its own MLflow run in the experiment's MLflow experiment, tagged with the checkpoint.
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(config.name)
    (mlflow_run,) = client.search_runs([experiment.experiment_id], filter_string=f"tags.`openforge.experiment` = '{eval_run_name(evaluation)}'")
    assert mlflow_run.data.tags[TAG_CHECKPOINT] == "0"
    metrics = mlflow_run.data.metrics
    assert metrics["eval/pass_at_2"] == pytest.approx(summary.pass_at[2])
    assert metrics["eval/rollouts/ok"] == summary.status_counts["ok"]
    assert "Evaluation base-e2e" in out.getvalue()
