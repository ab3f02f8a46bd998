"""The prepare step: pick this iteration's tasks, freeze them in the store, plan the rollouts.

The task folders are copied into the run's store (``<name>/tasks/<task_id>/...``) so
every rollout of the run reads the same bytes, even if the task set changes meanwhile.
The plan (``plan.json``) lists every rollout; the fan-out list returned (and passed to
Argo's ``withParam``) carries ids only, because output parameters are size-capped.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, open_store, put_dir
from components.rollout.tasks import Task, load_task_set, select_tasks


def rollout_id(task_id: str, sample_index: int) -> str:
    return f"{task_id}-s{sample_index}"


def group_id(iteration: int, task_id: str) -> str:
    """The GRPO group: the rollouts of one task in one iteration, compared with each other."""
    return f"it{iteration}-{task_id}"


def plan_rollouts(tasks: list[Task], samples_per_task: int, iteration: int) -> list[dict]:
    return [
        {
            "rollout_id": rollout_id(task.id, sample),
            "task_id": task.id,
            "sample_index": sample,
            "group_id": group_id(iteration, task.id),
        }
        for task in tasks
        for sample in range(samples_per_task)
    ]


def prepare_iteration(config: ExperimentConfig, iteration: int, store: ArtifactStore) -> list[dict]:
    """Select and snapshot the tasks, write ``plan.json``; return the fan-out list (ids only)."""
    layout = RunLayout(config.name)
    source = config.tasks.source
    with tempfile.TemporaryDirectory(prefix="openforge-tasks-") as cache:
        # An S3 task set is assumed to live behind the same endpoint as the run's store.
        source_store = open_store(source, config.storage.endpoint_url) if source.startswith("s3://") else None
        tasks = load_task_set(source, store=source_store, cache_dir=Path(cache))
        chosen = select_tasks(tasks, config.tasks.per_iteration, config.seed, iteration)
        for task in chosen:
            put_dir(store, layout.task(task.id), task.task_dir)
    rollouts = plan_rollouts(chosen, config.rollout.samples_per_task, iteration)
    plan = {
        "iteration": iteration,
        "task_source": source,
        "seed": config.seed,
        "samples_per_task": config.rollout.samples_per_task,
        "tasks": [task.id for task in chosen],
        "rollouts": rollouts,
    }
    store.put_bytes(layout.plan(iteration), json.dumps(plan, indent=2).encode() + b"\n")
    return [{"rollout_id": r["rollout_id"], "task_id": r["task_id"]} for r in rollouts]
