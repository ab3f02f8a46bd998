"""State shared by every node of one workflow execution: options, slots, processes, results."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from components.core.services import openforge_argv
from components.core.storage import ArtifactStore
from pipelines.executor._events import NodeEvent, NodePhase, Observer
from pipelines.executor._manifest import Workflow
from pipelines.executor._isolation import SandboxOptions
from pipelines.executor._podman import PodmanOptions
from pipelines.executor._processes import ProcessRegistry
from pipelines.executor._templating import mark
from pipelines.executor._warm import WarmStarts

_T = TypeVar("_T")
_SLOT_POLL_S = 0.2


@dataclass(frozen=True)
class ExecutorOptions:
    """How the local executor runs a manifest (nothing here changes *what* runs)."""

    cwd: Path = field(default_factory=Path.cwd)
    """Working directory of every process: relative paths in the config resolve from here."""
    ready_timeout_s: float = 600.0
    """How long a daemon step may take to pass its readiness probe."""
    stop_timeout_s: float = 10.0
    """Grace between SIGTERM and SIGKILL when stopping a process."""
    skip_existing_outputs: bool = False
    """Skip a pod whose required output artifacts are all in the store already (resume)."""
    skip: Callable[[str], str | None] | None = None
    """DAG task name -> reason to skip it (resume rules for steps without output artifacts)."""
    keep_sandboxes: bool = False
    """Keep every pod's sandbox (failed pods' sandboxes are always kept)."""
    programs: Mapping[str, list[str]] = field(default_factory=lambda: {"openforge": openforge_argv()})
    """Program names in the images -> local command lines (`openforge` -> this Python's CLI)."""
    warm: WarmStarts | None = None
    """Fork `openforge` containers from this warm-start server once it is ready (see _warm.py)."""
    podman: PodmanOptions | None = None
    """Run the pods it selects (the rollouts) with `podman kube play` instead of as processes."""
    sandbox: SandboxOptions | None = None
    """Run the pods it selects (the rollouts) as processes in a sandbox of their own (_isolation.py)."""


@dataclass(frozen=True)
class NodeResult:
    """How one node ended."""

    task: str
    node: str
    phase: NodePhase
    detail: str = ""
    duration_s: float = 0.0


class Slots:
    """The concurrency limits a node counts against (its DAG's and the workflow's parallelism)."""

    def __init__(self, *semaphores: threading.Semaphore | None) -> None:
        self._semaphores = [s for s in semaphores if s is not None]

    def acquire(self, cancel: threading.Event) -> bool:
        """Take one slot of each limit; False (holding none) when the run is cancelled first."""
        taken: list[threading.Semaphore] = []
        for semaphore in self._semaphores:
            while not semaphore.acquire(timeout=_SLOT_POLL_S):
                if cancel.is_set():
                    for held in taken:
                        held.release()
                    return False
            taken.append(semaphore)
        return True

    def release(self) -> None:
        for semaphore in reversed(self._semaphores):
            semaphore.release()


def semaphore(limit: int | None) -> threading.Semaphore | None:
    return threading.BoundedSemaphore(limit) if limit else None


@dataclass
class Context:
    """One execution: what every node needs to run and to report."""

    workflow: Workflow
    store: ArtifactStore
    workdir: Path
    options: ExecutorOptions
    observer: Observer
    registry: ProcessRegistry
    cancel: threading.Event = field(default_factory=threading.Event)
    status: str | None = None  # `{{workflow.status}}`, set once the entrypoint ended (for onExit)
    results: list[NodeResult] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.pod_slots = semaphore(self.workflow.parallelism)

    def workflow_scope(self) -> dict[str, str]:
        scope = {f"workflow.parameters.{k}": mark(v) for k, v in self.workflow.parameters.items()}
        scope["workflow.name"] = mark(self.workflow.name)
        if self.status is not None:
            scope["workflow.status"] = mark(self.status)
        return scope

    def node_dir(self, kind: str, node: str) -> Path:
        return self.workdir / kind / re.sub(r"[^\w.-]+", "-", node).strip("-")

    def report(self, event: NodeEvent, duration_s: float | None = None) -> None:
        if duration_s is not None:
            with self._lock:
                self.results.append(NodeResult(event.task, event.node, event.phase, event.detail, duration_s))
        self.observer(event)


def spawn(fn: Callable[..., _T], *args: Any) -> Future[_T]:
    """Run ``fn(*args)`` in a new thread; its result or exception lands in the future.

    One thread per running node (not a pool): nested DAGs wait on their children, and a
    bounded pool could deadlock on that; concurrency is bounded by ``Slots`` instead.
    """
    future: Future[_T] = Future()

    def target() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future
