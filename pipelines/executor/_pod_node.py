"""One pod node: skip rules, retries, the daemon life cycle, artifacts and output parameters."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.services import ServiceError
from components.core.storage import StorageError
from pipelines.executor._artifacts import ArtifactError, download_inputs, outputs_exist, upload_outputs
from pipelines.executor._context import Context
from pipelines.executor._events import NodeEvent, NodePhase
from pipelines.executor._isolation import start_sandboxed_pod
from pipelines.executor._manifest import ManifestError, retries, retry_limit
from pipelines.executor._podman import PodmanPod, start_podman_pod
from pipelines.executor._processes import RunningPod, start_pod
from pipelines.executor._sandbox import LOOPBACK, PathMap, PodPlan, plan_pod
from pipelines.executor._templating import unmark

_LOG_TAIL_LINES = 15


@dataclass
class TaskOutcome:
    """What a DAG needs to know about a finished (or daemoned) node."""

    phase: NodePhase
    detail: str = ""
    error: bool = False  # the system around the step broke (Argo's Error), not the step itself
    parameters: dict[str, str] = field(default_factory=dict)
    ports: Mapping[int, int] = field(default_factory=dict)
    daemon: RunningPod | None = None
    started: float = field(default_factory=time.monotonic)
    outputs: dict[str, Path] = field(default_factory=dict)  # uploaded output artifacts, local files
    discard: Path | None = None  # sandbox to remove once the outcome is reported
    on_stop: list[Callable[[], None]] = field(default_factory=list)  # run when a daemon stops

    @property
    def ok(self) -> bool:
        return self.phase in (NodePhase.SUCCEEDED, NodePhase.DAEMONED, NodePhase.SKIPPED)


def run_pod_node(ctx: Context, template: dict[str, Any], task: str, node: str, where: str) -> TaskOutcome:
    """Run a container template (resolved) as one node, retrying per its retryStrategy."""
    reason = _skip_reason(ctx, template, task, where)
    if reason:
        ctx.report(NodeEvent(task, node, NodePhase.SKIPPED, reason), 0.0)
        return TaskOutcome(NodePhase.SKIPPED, reason)
    started = time.monotonic()
    ctx.report(NodeEvent(task, node, NodePhase.RUNNING))
    if template.get("daemon"):
        return _start_daemon(ctx, template, task, node, where, started)
    attempts = retry_limit(template, where) + 1
    for attempt in range(attempts):
        # Each attempt is a fresh pod (its own sandbox and logs), as an Argo retry is.
        outcome = _attempt(ctx, template, task, node if attempt == 0 else f"{node}.retry{attempt}", where)
        if outcome.ok or ctx.cancel.is_set() or not retries(template, outcome.error):
            break
    outcome.started = started
    _report_final(ctx, task, node, outcome, started)
    return outcome


def stop_daemon(ctx: Context, outcome: TaskOutcome, task: str, node: str) -> str | None:
    """Stop a daemon at the end of its DAG; the failure detail when it had died on its own."""
    pod = outcome.daemon
    assert pod is not None
    code = pod.main.process.poll()
    pod.stop()
    for release in outcome.on_stop:
        release()
    detail = None
    if code is not None and not ctx.cancel.is_set():
        detail = f"daemon exited with code {code} while the DAG ran; log: {pod.main.log_path}\n{pod.main.log_tail(_LOG_TAIL_LINES)}"
    phase = NodePhase.FAILED if detail else NodePhase.SUCCEEDED
    ctx.report(NodeEvent(task, node, phase, detail or "stopped at the end of the DAG"), time.monotonic() - outcome.started)
    return detail


def _skip_reason(ctx: Context, template: dict[str, Any], task: str, where: str) -> str | None:
    if ctx.options.skip is not None:
        reason = ctx.options.skip(task)
        if reason:
            return reason
    has_parameters = bool((template.get("outputs") or {}).get("parameters"))
    # A node with output parameters must run: its dependents need the values.
    if ctx.options.skip_existing_outputs and not has_parameters and outputs_exist(template, ctx.store, where):
        return "outputs already in the store"
    return None


def _prepare(ctx: Context, template: dict[str, Any], node: str, where: str) -> tuple[PodPlan, Path]:
    sandbox = ctx.node_dir("pods", node)
    if sandbox.exists():  # a rerun starts from a fresh pod, as Argo's would
        shutil.rmtree(sandbox)
    plan = plan_pod(template, ctx.workflow.volumes, sandbox, ctx.options.cwd, ctx.options.programs, where)
    try:
        download_inputs(template, ctx.store, plan.paths, where)
    except BaseException:
        plan.release_ports()
        raise
    return plan, ctx.node_dir("logs", node)


def _start_daemon(ctx: Context, template: dict[str, Any], task: str, node: str, where: str, started: float) -> TaskOutcome:
    plan, logs = None, None
    try:
        plan, logs = _prepare(ctx, template, node, where)
        pod = start_pod(plan, logs, ctx.registry)
    except (ArtifactError, StorageError, ServiceError) as exc:
        if plan is not None:
            plan.release_ports()
        outcome = TaskOutcome(NodePhase.FAILED, str(exc), error=True, started=started)
        _report_final(ctx, task, node, outcome, started)
        return outcome
    probe = (template["container"].get("readinessProbe") or {}).get("httpGet")
    if probe:
        url = f"http://{LOOPBACK}:{plan.local_port(probe['port'], where)}{unmark(probe.get('path', '/'))}"
        try:
            pod.wait_ready(url, ctx.options.ready_timeout_s)
        except ServiceError as exc:
            pod.stop()
            plan.release_ports()
            outcome = TaskOutcome(NodePhase.FAILED, f"readiness probe failed: {exc}", started=started)
            _report_final(ctx, task, node, outcome, started)
            return outcome
    ctx.report(NodeEvent(task, node, NodePhase.DAEMONED, f"ready on {LOOPBACK}"))
    return TaskOutcome(
        NodePhase.DAEMONED, ports=plan.ports.ports, daemon=pod, started=started, on_stop=[plan.release_ports]
    )


def _attempt(ctx: Context, template: dict[str, Any], task: str, node: str, where: str) -> TaskOutcome:
    plan, logs = None, None
    try:
        plan, logs = _prepare(ctx, template, node, where)
        podman = ctx.options.podman
        if podman is not None and podman.runs(template):
            pod: RunningPod | PodmanPod = start_podman_pod(
                plan, template, ctx.workflow.security_context, logs, podman, ctx.options.stop_timeout_s
            )
        elif ctx.options.sandbox is not None and ctx.options.sandbox.runs(template):
            pod = start_sandboxed_pod(plan, logs, ctx.registry, ctx.options.sandbox)
        else:
            pod = start_pod(plan, logs, ctx.registry)
    except (ArtifactError, StorageError, ServiceError) as exc:
        if plan is not None:
            plan.release_ports()
        return TaskOutcome(NodePhase.FAILED, str(exc), error=True)
    try:
        code = pod.wait(_deadline(template, where), ctx.cancel)
    finally:
        pod.stop()
        plan.release_ports()
    if ctx.cancel.is_set():
        return TaskOutcome(NodePhase.OMITTED, "stopped: the run was cancelled")
    try:
        # As Argo does: outputs are saved whether or not the main container succeeded.
        uploaded, missing = upload_outputs(template, ctx.store, plan.paths, where)
    except StorageError as exc:
        return TaskOutcome(NodePhase.FAILED, f"uploading outputs failed: {exc}", error=True)
    parameters, errors = _output_parameters(template, plan.paths, where)
    outcome = TaskOutcome(NodePhase.SUCCEEDED, parameters=parameters, ports=plan.ports.ports, outputs=uploaded)
    if code is None:
        outcome.detail = f"exceeded activeDeadlineSeconds; log: {pod.main.log_path}"
    elif code != 0:
        outcome.detail = f"exit code {code}; log: {pod.main.log_path}\n{pod.main.log_tail(_LOG_TAIL_LINES)}"
    elif missing or errors:
        outcome.detail = "; ".join([*(f"output artifact {m} was not written" for m in missing), *errors])
    if outcome.detail:
        outcome.phase = NodePhase.FAILED
    if outcome.ok and not ctx.options.keep_sandboxes:
        outcome.discard = plan.sandbox
    return outcome


def _report_final(ctx: Context, task: str, node: str, outcome: TaskOutcome, started: float) -> None:
    ctx.report(NodeEvent(task, node, outcome.phase, outcome.detail, outputs=outcome.outputs), time.monotonic() - started)
    if outcome.discard is not None:  # after the report: observers may read the outputs in place
        shutil.rmtree(outcome.discard, ignore_errors=True)


def _deadline(template: dict[str, Any], where: str) -> float | None:
    value = template.get("activeDeadlineSeconds")
    if value is None:
        return None
    try:
        return float(unmark(str(value)))
    except ValueError:
        raise ManifestError(f"{where}: activeDeadlineSeconds must be a number, got {value!r}") from None


def _output_parameters(template: dict[str, Any], paths: PathMap, where: str) -> tuple[dict[str, str], list[str]]:
    values: dict[str, str] = {}
    errors: list[str] = []
    for param in (template.get("outputs") or {}).get("parameters", []):
        source = param.get("valueFrom") or {}
        if "path" not in source:
            raise ManifestError(f"{where}: output parameter {param['name']!r}: only valueFrom.path is supported")
        local = paths.local(unmark(source["path"]))
        if local.is_file():
            values[param["name"]] = local.read_text().rstrip("\n")
        elif source.get("default") is not None:
            values[param["name"]] = unmark(str(source["default"]))
        else:
            errors.append(f"output parameter {param['name']!r}: {source['path']} was not written")
    return values, errors
