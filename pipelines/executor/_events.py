"""What the executor tells its observer (the user's view, tests) while a workflow runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class NodePhase(str, Enum):
    RUNNING = "running"
    DAEMONED = "daemoned"  # a daemon step that passed its readiness probe
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"  # not run: its outputs already exist (resume) or a skip rule said so
    OMITTED = "omitted"  # not run: a task it depends on failed, or the run was stopped


@dataclass(frozen=True)
class NodeEvent:
    """One node's change of phase.

    ``task`` is the DAG task's name (shared by all children of a fan-out), ``node`` the
    node's own name (``rollout(3)`` for the fourth child). ``fan_out`` is set on the
    RUNNING event of a fan-out task: how many children it expands into. ``outputs`` are
    the local files of the uploaded output artifacts, readable during the callback.
    """

    task: str
    node: str
    phase: NodePhase
    detail: str = ""
    fan_out: int | None = None
    outputs: Mapping[str, Path] = field(default_factory=dict)


Observer = Callable[[NodeEvent], None]


def ignore_events(event: NodeEvent) -> None:
    """The observer used when nobody watches."""
