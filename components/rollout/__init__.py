"""Rollouts: tasks and task sets, harness adapters, the reference harness, the runner, prepare."""

from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun, get_harness
from components.rollout.prepare import prepare_iteration
from components.rollout.runner import run_rollout, verdict
from components.rollout.tasks import Task, TaskError, VerifierSpec, load_task, load_task_set, select_tasks

__all__ = [
    "HarnessAdapter",
    "HarnessCommand",
    "HarnessRun",
    "Task",
    "TaskError",
    "VerifierSpec",
    "get_harness",
    "load_task",
    "load_task_set",
    "prepare_iteration",
    "run_rollout",
    "select_tasks",
    "verdict",
]
