"""Templates as nodes: a DAG walked in dependency order, with fan-out, parallelism and daemons.

As in Argo: a task starts once every task it depends on succeeded (or was skipped, or
is a ready daemon); the first failure stops new tasks from starting while running ones
finish (fail-fast); daemons started by a DAG are stopped when that DAG ends, however
it ends; a template's ``parallelism`` bounds its running tasks, fan-out children
included, and the workflow's bounds running pods.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from pipelines.executor._context import Context, Slots, semaphore, spawn
from pipelines.executor._events import NodeEvent, NodePhase
from pipelines.executor._manifest import ManifestError, check_acyclic, dependencies, parallelism
from pipelines.executor._pod_node import TaskOutcome, run_pod_node, stop_daemon
from pipelines.executor._sandbox import LOOPBACK
from pipelines.executor._templating import TemplateError, evaluate_when, mark, resolve, unmark

_WAIT_S = 0.2  # the main thread wakes this often, so Ctrl-C is handled at once


def run_template(ctx: Context, name: str, arguments: dict[str, Any], task: str, node: str) -> TaskOutcome:
    """Run template ``name`` as node ``node`` with ``arguments`` (resolved in the caller's scope)."""
    where = f"template {name!r}"
    template, scope = _bind_inputs(ctx, ctx.workflow.template(name, f"node {node!r}"), arguments, where)
    if "dag" in template:
        return _DagRun(ctx, name, template, scope, node, is_root=node == ctx.workflow.name).run(task)
    if "container" in template:
        resolved = resolve(template, {**scope, "pod.name": mark(node)}, where)
        return _holding(Slots(ctx.pod_slots), ctx, lambda: run_pod_node(ctx, resolved, task, node, where))
    raise ManifestError(f"{where} has neither a dag nor a container")


def _holding(slots: Slots, ctx: Context, run: Callable[[], TaskOutcome]) -> TaskOutcome:
    """Run while holding ``slots``; a daemon keeps them until it stops (Argo counts it as running)."""
    if not slots.acquire(ctx.cancel):
        return TaskOutcome(NodePhase.OMITTED, "the run was cancelled")
    try:
        outcome = run()
    except BaseException:
        slots.release()
        raise
    if outcome.daemon is not None:
        outcome.on_stop.append(slots.release)
    else:
        slots.release()
    return outcome


def _bind_inputs(
    ctx: Context, template: dict[str, Any], arguments: dict[str, Any], where: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The template with its input artifacts bound, and its scope with input parameters bound."""
    inputs = template.get("inputs") or {}
    given = {p["name"]: p for p in arguments.get("parameters") or []}
    declared = {p["name"]: p for p in inputs.get("parameters") or []}
    _refuse_unknown(given, declared, "parameter", where)
    scope = ctx.workflow_scope()
    for pname, param in declared.items():
        if (given.get(pname) or param).get("valueFrom") is not None:
            raise ManifestError(f"{where}: parameter {pname!r}: valueFrom is not supported here; use value")
        if given.get(pname, {}).get("value") is not None:
            value = str(given[pname]["value"])  # already resolved where the task was written
        elif param.get("value", param.get("default")) is not None:
            value = resolve(str(param.get("value", param.get("default"))), scope, where)
        else:
            raise ManifestError(f"{where}: input parameter {pname!r} has no value; pass it in the task's arguments")
        scope[f"inputs.parameters.{pname}"] = value
    given_artifacts = {a["name"]: a for a in arguments.get("artifacts") or []}
    declared_artifacts = inputs.get("artifacts") or []
    _refuse_unknown(given_artifacts, {a["name"]: a for a in declared_artifacts}, "artifact", where)
    if given_artifacts:
        bound = [{**a, **given_artifacts.get(a["name"], {})} for a in declared_artifacts]
        template = {**template, "inputs": {**inputs, "artifacts": bound}}
    return template, scope


def _refuse_unknown(given: dict[str, Any], declared: dict[str, Any], kind: str, where: str) -> None:
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ManifestError(f"{where} declares no input {kind}(s) {', '.join(unknown)} (declared: {', '.join(declared) or 'none'})")


def _text(value: Any) -> str:
    """A JSON value as Argo substitutes it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _item_scope(item: Any) -> dict[str, str]:
    scope = {"item": mark(_text(item))}
    if isinstance(item, dict):
        scope.update({f"item.{k}": mark(_text(v)) for k, v in item.items()})
    return scope


def _outcome_of(future: Future[TaskOutcome]) -> TaskOutcome:
    """A node's outcome; an unexpected exception in it is that node's failure."""
    try:
        return future.result()
    except ManifestError:
        raise  # a broken manifest stops the whole run, with its own message
    except Exception as exc:
        return TaskOutcome(NodePhase.FAILED, f"{type(exc).__name__}: {exc}")


class _DagRun:
    """One execution of a DAG template."""

    def __init__(self, ctx: Context, name: str, template: dict[str, Any], scope: dict[str, str], node: str, is_root: bool) -> None:
        self.ctx, self.name, self.scope, self.node = ctx, name, scope, node
        self.where = f"template {name!r}"
        self.tasks = {t["name"]: t for t in template["dag"].get("tasks") or []}
        self.deps = {n: dependencies(t, self.tasks, f"{self.where} task {n!r}") for n, t in self.tasks.items()}
        check_acyclic(self.deps, self.where)
        self.prefix = "" if is_root else f"{node}."
        self.slots = Slots(semaphore(parallelism(template, self.where)))
        self.outcomes: dict[str, TaskOutcome] = {}
        self.failures: list[str] = []
        self.fail_fast = threading.Event()

    def run(self, task: str) -> TaskOutcome:
        started = time.monotonic()
        if self.prefix:
            self.ctx.report(NodeEvent(task, self.node, NodePhase.RUNNING))
        try:
            self._walk()
        except BaseException:
            self.ctx.cancel.set()  # before the daemons stop: their exit is then no failure
            raise
        finally:
            self._stop_daemons()
        detail = "\n".join(self.failures)
        phase = NodePhase.FAILED if detail else NodePhase.SUCCEEDED
        if self.prefix:  # the root DAG is the workflow itself: its end is the call's result
            self.ctx.report(NodeEvent(task, self.node, phase, detail), time.monotonic() - started)
        return TaskOutcome(phase, detail, started=started)

    def _walk(self) -> None:
        pending = list(self.tasks)  # manifest order: ties start in the order written
        running: dict[Future[TaskOutcome], str] = {}
        while pending or running:
            if self.failures or self.ctx.cancel.is_set():
                for name in pending:
                    self.ctx.report(NodeEvent(name, self.prefix + name, NodePhase.OMITTED, "an earlier task failed"), 0.0)
                pending = []
            for name in [n for n in pending if all(self._ok(d) for d in self.deps[n])]:
                pending.remove(name)
                running[spawn(self._run_task, name)] = name
            if not running:
                break
            done, _ = wait(running, timeout=_WAIT_S, return_when=FIRST_COMPLETED)
            for future in done:
                name = running.pop(future)
                self._finish(name, future)

    def _finish(self, name: str, future: Future[TaskOutcome]) -> None:
        outcome = _outcome_of(future)
        self.outcomes[name] = outcome
        if not outcome.ok:
            self.failures.append(f"{self.prefix}{name}: {outcome.detail}")
            self.fail_fast.set()

    def _ok(self, name: str) -> bool:
        outcome = self.outcomes.get(name)
        return outcome is not None and outcome.ok

    def _stop_daemons(self) -> None:
        for name, outcome in self.outcomes.items():
            if outcome.daemon is not None:
                detail = stop_daemon(self.ctx, outcome, name, self.prefix + name)
                if detail:
                    self.failures.append(f"{self.prefix}{name}: {detail}")

    def _address_of(self, task: str, port: int | None) -> str:
        outcome = self.outcomes.get(task)
        if outcome is None:
            raise TemplateError(f"{self.where}: {{{{tasks.{task}.ip}}}} is used before task {task!r} ran (add it to depends)")
        if port is None:
            return LOOPBACK
        if port not in outcome.ports:
            raise TemplateError(f"{self.where}: task {task!r} exposes no port {port} (declare it as a containerPort)")
        return f"{LOOPBACK}:{outcome.ports[port]}"

    def _task_scope(self) -> dict[str, str]:
        scope = dict(self.scope)
        for name, outcome in list(self.outcomes.items()):
            scope.update({f"tasks.{name}.outputs.parameters.{p}": mark(v) for p, v in outcome.parameters.items()})
        return scope

    def _items(self, task: dict[str, Any], scope: dict[str, str], where: str) -> list[Any] | None:
        if task.get("withParam") is not None:
            raw = unmark(resolve(task["withParam"], scope, where, self._address_of))
            try:
                items = json.loads(raw)
            except json.JSONDecodeError:
                items = None
            if not isinstance(items, list):
                raise ManifestError(f"{where}: withParam must resolve to a JSON list, got {raw[:200]!r}")
            return items
        if task.get("withItems") is not None:
            return [resolve(item, scope, where) for item in task["withItems"]]
        return None

    def _run_task(self, name: str) -> TaskOutcome:
        task = self.tasks[name]
        where = f"task {name!r} of {self.where}"
        if not task.get("template"):
            raise ManifestError(f"{where}: needs `template` (templateRef is not supported locally)")
        scope = self._task_scope()
        if task.get("when") is not None:
            condition = unmark(resolve(task["when"], scope, where, self._address_of))
            if not evaluate_when(condition, where):
                detail = f"when {task['when']!r} was false ({condition})"
                self.ctx.report(NodeEvent(name, self.prefix + name, NodePhase.SKIPPED, detail), 0.0)
                return TaskOutcome(NodePhase.SKIPPED, detail)
        items = self._items(task, scope, where)
        if items is None:
            return self._run_child(task, scope, name, self.prefix + name, where)
        return self._fan_out(task, scope, items, where)

    def _run_child(self, task: dict[str, Any], scope: dict[str, str], name: str, node: str, where: str) -> TaskOutcome:
        def run() -> TaskOutcome:
            arguments = resolve(task.get("arguments") or {}, scope, where, self._address_of)
            return run_template(self.ctx, task["template"], arguments, name, node)

        outcome = _holding(self.slots, self.ctx, run)
        if not outcome.ok:
            self.fail_fast.set()
        return outcome

    def _fan_out(self, task: dict[str, Any], scope: dict[str, str], items: list[Any], where: str) -> TaskOutcome:
        name, node, started = task["name"], self.prefix + task["name"], time.monotonic()
        self.ctx.report(NodeEvent(name, node, NodePhase.RUNNING, fan_out=len(items)))
        children: list[Future[TaskOutcome]] = []
        omitted = 0
        for index, item in enumerate(items):
            child = f"{node}({index})"
            if self.fail_fast.is_set() or self.ctx.cancel.is_set():
                self.ctx.report(NodeEvent(name, child, NodePhase.OMITTED, "an earlier task failed"), 0.0)
                omitted += 1
                continue
            children.append(spawn(self._run_child, task, {**scope, **_item_scope(item)}, name, child, where))
            # Start the next child only when a slot is free, so at most `parallelism` threads wait.
            self._wait_for_slot()
        outcomes = [_outcome_of(f) for f in children]
        failed = [o for o in outcomes if not o.ok]
        parameters = {
            p: json.dumps([o.parameters.get(p) for o in outcomes])
            for p in sorted({p for o in outcomes for p in o.parameters})
        }
        phase = NodePhase.FAILED if failed or omitted else NodePhase.SUCCEEDED
        detail = f"{len(failed)} of {len(items)} failed, {omitted} not started" if phase is NodePhase.FAILED else ""
        if failed:
            detail += "\n" + failed[0].detail
        self.ctx.report(NodeEvent(name, node, phase, detail), time.monotonic() - started)
        return TaskOutcome(phase, detail, parameters=parameters, started=started)

    def _wait_for_slot(self) -> None:
        if self.slots.acquire(self.ctx.cancel):
            self.slots.release()
