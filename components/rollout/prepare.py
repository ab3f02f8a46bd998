"""The prepare step: pick this iteration's tasks, freeze them in the store, plan the rollouts.

The task folders are copied into the run's store (``<name>/tasks/<task_id>/...``) so
every rollout of the run reads the same bytes, even if the task set changes meanwhile.
The plan (``plan.json``) lists every rollout; the fan-out list returned (and passed to
Argo's ``withParam``) carries ids and the pod deadline only, because output parameters are
size-capped. Which tasks an iteration takes is decided by the run's task cursor
(``select_tasks``), which the plan records next to where it leaves the cursor.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from pydantic import ValidationError

from components.core.choices import ChoiceBook
from components.core.config import ExperimentConfig
from components.core.rollout_identity import group_id, make_rollout_id
from components.core.storage import ArtifactStore, open_store, put_dir, run_layout
from components.core.validation import join_errors
from components.rollout.harnesses import get_harness
from components.rollout.tasks import Task, load_task_set, select_tasks


def pod_deadline_s(config: ExperimentConfig, task: Task) -> int:
    """A rollout pod's whole life: start-up (scheduling, image pull), the harness and the verifier."""
    time_limit = task.time_limit_s or config.rollout.time_limit_s
    return math.ceil(time_limit + task.verifier.timeout_s + config.cluster.rollout_startup_s)


def plan_rollouts(config: ExperimentConfig, tasks: list[Task], iteration: int) -> list[dict]:
    return [
        {
            "rollout_id": make_rollout_id(task.id, sample),
            "task_id": task.id,
            "sample_index": sample,
            "group_id": group_id(iteration, task.id),
            "deadline_s": pod_deadline_s(config, task),
        }
        for task in tasks
        for sample in range(config.rollout.samples_per_task)
    ]


def fan_out(plan: dict) -> list[dict]:
    """The list the DAG fans out over (``withParam``): what each rollout pod is given."""
    return [{k: r[k] for k in ("rollout_id", "task_id", "deadline_s")} for r in plan["rollouts"]]


def prepare_iteration(config: ExperimentConfig, iteration: int, store: ArtifactStore, cursor: int = 0) -> dict:
    """Select the tasks at ``cursor``, snapshot them, write ``plan.json`` and return the plan."""
    layout = run_layout(config)
    source = config.tasks.source
    with tempfile.TemporaryDirectory(prefix="openforge-tasks-") as cache:
        # An S3 task set is assumed to live behind the same endpoint as the run's store.
        source_store = open_store(source, config.storage.endpoint_url) if source.startswith("s3://") else None
        tasks = load_task_set(source, store=source_store, cache_dir=Path(cache))
        chosen, next_cursor = select_tasks(tasks, config.tasks.per_iteration, config.seed, cursor)
        for task in chosen:
            put_dir(store, layout.task(task.id), task.task_dir)
    plan = {
        "iteration": iteration,
        "task_source": source,
        "seed": config.seed,
        "samples_per_task": config.rollout.samples_per_task,
        "task_cursor": cursor,
        "next_task_cursor": next_cursor,
        "tasks": [task.id for task in chosen],
        "rollouts": plan_rollouts(config, chosen, iteration),
    }
    # Before the plan: a stored plan (what a resumed iteration reuses) implies its book is stored.
    if config.serves_a_book:
        adapter = get_harness(config.harness.name)
        patterns = (adapter.choice_turn_pattern, adapter.choice_element_pattern)
        if config.plays_reference:
            book = reference_book(chosen, source, *patterns, error_rate=config.teacher.error_rate)
        else:
            book = choice_book(chosen, source, *patterns)
        store.put_bytes(layout.choices(iteration), book.model_dump_json(indent=2).encode())
    store.put_bytes(layout.plan(iteration), json.dumps(plan, indent=2).encode() + b"\n")
    return plan


class NoChoicesError(ValueError):
    """Choice mode on a task set that offers no choices."""


def choice_book(
    tasks: list[Task], source: str, turn_pattern: str | None = None, element_pattern: str | None = None
) -> ChoiceBook:
    """The engine's book for these tasks; tasks without ``choices`` are left to free sampling.

    ``turn_pattern`` and ``element_pattern``: the harness's ``choice_turn_pattern`` (how its
    requests state the step) and ``choice_element_pattern`` (how they number page elements).
    """
    entries = [entry for task in tasks if (entry := task.choice_entry()) is not None]
    if not entries:
        raise NoChoicesError(
            f"engine.dev_mode is 'choice' but none of this iteration's tasks in {source} offers choices: add "
            "`choices:` to their task.yaml (docs/tasks.md, \"Candidate turns\") or set engine.dev_mode: sample"
        )
    try:
        return ChoiceBook(tasks=entries, turn_pattern=turn_pattern, element_pattern=element_pattern)
    except ValidationError as exc:
        raise NoChoicesError(f"the choices of {source} cannot be used: {join_errors(exc)}") from None


def reference_book(
    tasks: list[Task], source: str, turn_pattern: str | None, element_pattern: str | None, *, error_rate: float
) -> ChoiceBook:
    """A reference teacher's book: every task's reference turns, each with its errors (``Task.reference_entry``)."""
    missing = [task.id for task in tasks if task.reference is None]
    if missing:
        raise NoChoicesError(
            f"teacher.kind is reference but tasks {missing[:5]} of {source} have no `reference:` turns; add them "
            "to their task.yaml (docs/tasks.md, \"Reference solutions\") or record from teacher.kind endpoint"
        )
    entries = [task.reference_entry() for task in tasks]
    try:
        return ChoiceBook(tasks=entries, turn_pattern=turn_pattern, element_pattern=element_pattern, error_rate=error_rate)
    except ValidationError as exc:
        raise NoChoicesError(f"the references of {source} cannot be used: {join_errors(exc)}") from None
