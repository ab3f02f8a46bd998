"""Rollouts: tasks and task sets, harness adapters, the reference harness, the runner, prepare.

Exports load on first use (``components.core.lazy``): the rollout CLI lives in this
package, and ``openforge --help`` must not load the runner's aiohttp or the config's pydantic.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "HarnessAdapter": "components.rollout.harnesses.base:HarnessAdapter",
        "HarnessCommand": "components.rollout.harnesses.base:HarnessCommand",
        "HarnessRun": "components.rollout.harnesses.base:HarnessRun",
        "get_harness": "components.rollout.harnesses:get_harness",
        "prepare_iteration": "components.rollout.prepare:prepare_iteration",
        "run_rollout": "components.rollout.runner:run_rollout",
        "verdict": "components.rollout.runner:verdict",
        "Task": "components.rollout.tasks:Task",
        "TaskError": "components.rollout.tasks:TaskError",
        "VerifierSpec": "components.rollout.tasks:VerifierSpec",
        "load_task": "components.rollout.tasks:load_task",
        "load_task_set": "components.rollout.tasks:load_task_set",
        "select_tasks": "components.rollout.tasks:select_tasks",
    },
)
