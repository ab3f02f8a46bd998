"""The local executor's entry point: run one compiled workflow on this machine."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.storage import ArtifactStore
from pipelines.executor._context import Context, ExecutorOptions, NodeResult
from pipelines.executor._dag import run_template
from pipelines.executor._events import NodePhase, Observer, ignore_events
from pipelines.executor._manifest import Workflow, load_workflow
from pipelines.executor._processes import ProcessRegistry
from pipelines.executor._templating import mark


class WorkflowFailed(RuntimeError):
    """The workflow ran and a node failed; the message names the nodes, their errors and logs."""

    def __init__(self, message: str, nodes: list[NodeResult]) -> None:
        super().__init__(message)
        self.nodes = nodes


@dataclass(frozen=True)
class WorkflowResult:
    """A workflow that succeeded: how each node ended."""

    name: str
    nodes: list[NodeResult]

    def phases(self, task: str) -> list[NodePhase]:
        return [n.phase for n in self.nodes if n.task == task]


def execute_workflow(
    manifests: list[dict[str, Any]],
    *,
    parameters: Mapping[str, str],
    store: ArtifactStore,
    workdir: Path,
    options: ExecutorOptions | None = None,
    observer: Observer = ignore_events,
) -> WorkflowResult:
    """Run the workflow in ``manifests`` with ``parameters``; raise ``WorkflowFailed`` if a node fails.

    ``workdir`` receives each pod's sandbox (``pods/``) and container logs (``logs/``).
    Whatever happens (a failure, Ctrl-C, SIGTERM), no process it started outlives it.
    """
    options = options or ExecutorOptions()
    workflow = load_workflow(manifests, parameters)
    ctx = Context(
        workflow=workflow,
        store=store,
        workdir=workdir.absolute(),  # pod paths in command lines then hold wherever a container starts
        options=options,
        observer=observer,
        registry=ProcessRegistry(options.stop_timeout_s, options.warm),
    )
    try:
        with _sigterm_as_interrupt():
            outcome = run_template(ctx, workflow.entrypoint, _entry_arguments(workflow), workflow.name, workflow.name)
            failures = [] if outcome.ok else [outcome.detail]
            if workflow.on_exit is not None:
                failures += _run_exit_handler(ctx, workflow.on_exit, outcome.ok)
    except BaseException:
        ctx.cancel.set()
        raise
    finally:
        ctx.registry.stop_all()
    if failures:
        detail = "\n".join(failures)
        raise WorkflowFailed(f"workflow {workflow.name!r} failed:\n{detail}", ctx.results)
    return WorkflowResult(workflow.name, ctx.results)


def _entry_arguments(workflow: Workflow) -> dict[str, Any]:
    """As in Argo, the entrypoint's input parameters take the workflow parameters of the same name."""
    entry = workflow.template(workflow.entrypoint, "entrypoint")
    declared = [p["name"] for p in (entry.get("inputs") or {}).get("parameters") or []]
    given = [{"name": n, "value": mark(workflow.parameters[n])} for n in declared if n in workflow.parameters]
    return {"parameters": given}


def _run_exit_handler(ctx: Context, template: str, succeeded: bool) -> list[str]:
    """Run ``onExit`` after the entrypoint, however it ended; its failure fails the workflow."""
    ctx.status = "Succeeded" if succeeded else "Failed"
    node = f"{ctx.workflow.name}.onExit"
    outcome = run_template(ctx, template, {}, "onExit", node)
    return [] if outcome.ok else [f"onExit: {outcome.detail}"]


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C, so a killed run still stops its processes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
