"""The evaluation's last step: its summary in the store, its metrics in MLflow.

The report step (pipelines/steps/report.py) takes the place of train and commit in an
evaluation's DAG (pipelines/iteration.py). It reads what the score step wrote
(``rewards.json``) and what the serve step served (``checkpoint.json``), writes
``<name>/evals/<id>/summary.json`` and logs the numbers under ``eval/`` to an MLflow run
of its own in the experiment's MLflow experiment, tagged with the checkpoint evaluated.
Rerunning it rewrites the same key and logs only what the MLflow run lacks.
"""

from __future__ import annotations

import json

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, run_layout
from components.reward.summary import EvalSummary

METRIC_PREFIX = "eval/"
TAG_EVAL = "openforge.eval.id"
TAG_CHECKPOINT = "openforge.eval.checkpoint"
TAG_REQUESTED = "openforge.eval.requested"
TAG_TASKS = "openforge.eval.tasks"


class ReportError(RuntimeError):
    """An evaluation whose score or serve record is missing; the message names the key."""


def eval_run_name(config: ExperimentConfig) -> str:
    """The evaluation's MLflow run (and its tag value): one per evaluation id."""
    from components.core.tracking import eval_run_name as run_name

    return run_name(config.name, config.evaluation.id)


def _read(store: ArtifactStore, key: str, step: str) -> dict:
    if not store.exists(key):
        raise ReportError(f"{store.root}/{key} is missing: the {step} step did not finish; rerun the evaluation")
    return json.loads(store.get_bytes(key))


def write_report(config: ExperimentConfig, iteration: int, store: ArtifactStore) -> EvalSummary:
    """Summarize the scored evaluation, store the summary, log it to MLflow; returns it."""
    from components.core.outcome import RewardRecord
    from components.core.tracking import ExperimentTracker
    from components.reward.stats import TaskStats
    from components.reward.summary import summarize_evaluation

    if config.evaluation is None:
        raise ReportError("the report step summarizes an evaluation: run it from `openforge eval`, not a training config")
    layout = run_layout(config)
    scored = _read(store, layout.rewards(iteration), "score")
    teacher = config.endpoint_teacher
    if teacher is not None:  # no serve step: the teacher answered
        served = {"requested": "teacher", "version": 0, "source": f"{teacher.model} at {teacher.url}"}
    else:
        served = _read(store, layout.evaluated_checkpoint(), "serve")
    summary = summarize_evaluation(
        [RewardRecord.model_validate(r) for r in scored["records"]],
        [TaskStats.model_validate(t) for t in scored["tasks"]],
        config.rollout.samples_per_task,
        experiment=config.name,
        eval_id=config.evaluation.id,
        checkpoint=served,
        task_source=config.tasks.source,
    )
    text = summary.model_dump_json(indent=2)
    store.put_bytes(layout.eval_summary(), text.encode() + b"\n")
    tracker = ExperimentTracker(config.tracking, eval_run_name(config), experiment=config.name)
    tags = {
        TAG_EVAL: config.evaluation.id,
        TAG_CHECKPOINT: str(served["version"]),
        TAG_REQUESTED: str(served["requested"]),
        TAG_TASKS: config.tasks.source,
    }
    for key, value in tags.items():
        tracker.client.set_tag(tracker.run_id, key, value)
    # Step = the checkpoint version, so evaluations of successive checkpoints line up in one plot.
    tracker.log_iteration(int(served["version"]), {METRIC_PREFIX + k: v for k, v in summary.metrics().items()})
    tracker.log_text(text, "eval_summary.json")
    tracker.finish()
    return summary
