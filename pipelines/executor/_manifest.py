"""The compiled Argo manifests, reduced to what the local executor runs.

``load_workflow`` picks the workflow to run from the compiled documents (a Workflow,
or the WorkflowTemplate it or nobody else references), binds the workflow parameters,
and refuses the Argo features this executor does not implement, by name: running a
manifest *almost* as Argo would is worse than a clear error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipelines.executor._templating import ManifestError

# Fields that change what runs and that the executor does not implement.
_UNSUPPORTED_SPEC = ("hooks", "templateDefaults", "volumeClaimTemplates", "podSpecPatch")
_UNSUPPORTED_TEMPLATE = (
    "steps", "script", "resource", "suspend", "http", "plugin", "containerSet", "data",
    "initContainers", "memoize", "podSpecPatch",
)  # fmt: skip
_UNSUPPORTED_TASK = ("hooks", "onExit", "continueOn", "withSequence", "inline")
_DEPENDS_TERM = re.compile(r"^([A-Za-z0-9][-\w]*)(?:\.(Succeeded|Daemoned|Skipped))?$")


@dataclass(frozen=True)
class Workflow:
    """The workflow to run: its templates by name and the bound workflow parameters."""

    name: str
    entrypoint: str
    on_exit: str | None
    templates: Mapping[str, dict[str, Any]]
    parameters: Mapping[str, str]
    parallelism: int | None
    volumes: Mapping[str, dict[str, Any]]
    security_context: Mapping[str, Any] = field(default_factory=dict)  # the pods' (spec.securityContext)

    def template(self, name: str, where: str) -> dict[str, Any]:
        try:
            return self.templates[name]
        except KeyError:
            raise ManifestError(f"{where}: no template named {name!r} in workflow {self.name!r}") from None


def load_workflow(manifests: list[dict[str, Any]], parameters: Mapping[str, str]) -> Workflow:
    """The runnable workflow among ``manifests``, with ``parameters`` bound."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in manifests:
        by_kind.setdefault(str(doc.get("kind")), []).append(doc)
    templates = {_name(d): d for d in by_kind.get("WorkflowTemplate", [])}
    workflows = by_kind.get("Workflow", [])
    if len(workflows) > 1:
        raise ManifestError(f"{len(workflows)} Workflow documents given: pass exactly one")
    if workflows:
        doc = workflows[0]
        spec = dict(doc.get("spec") or {})
        ref = spec.pop("workflowTemplateRef", None)
        if ref is not None:
            base = templates.get(ref.get("name"))
            if base is None:
                raise ManifestError(f"Workflow {_name(doc)!r} references WorkflowTemplate {ref.get('name')!r}, not given")
            spec = {**base["spec"], **spec, "arguments": _merge_arguments(base["spec"], spec)}
    elif len(templates) == 1:
        doc = next(iter(templates.values()))
        spec = doc["spec"]
    else:
        found = ", ".join(sorted(templates)) or "none"
        raise ManifestError(f"need one Workflow or exactly one WorkflowTemplate to run (WorkflowTemplates: {found})")
    return _build(_name(doc), spec, parameters)


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "workflow").rstrip("-")


def _merge_arguments(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    params = {p["name"]: p for p in (base.get("arguments") or {}).get("parameters", [])}
    params.update({p["name"]: p for p in (override.get("arguments") or {}).get("parameters", [])})
    return {"parameters": list(params.values())}


def _build(name: str, spec: dict[str, Any], given: Mapping[str, str]) -> Workflow:
    _refuse(spec, _UNSUPPORTED_SPEC, f"workflow {name!r}")
    templates = {t["name"]: t for t in spec.get("templates", [])}
    for tname, template in templates.items():
        _refuse(template, _UNSUPPORTED_TEMPLATE, f"template {tname!r}")
        for task in (template.get("dag") or {}).get("tasks", []):
            _refuse(task, _UNSUPPORTED_TASK, f"task {task.get('name')!r} of template {tname!r}")
    for role in ("entrypoint", "onExit"):
        if role in spec and spec[role] not in templates:
            raise ManifestError(f"workflow {name!r}: {role} {spec[role]!r} is not one of its templates")
    if "entrypoint" not in spec:
        raise ManifestError(f"workflow {name!r} has no entrypoint; name the template to start with")
    return Workflow(
        name=name,
        entrypoint=spec["entrypoint"],
        on_exit=spec.get("onExit"),
        templates=templates,
        parameters=_bind_parameters(name, spec, given),
        parallelism=_positive_int(spec.get("parallelism"), f"workflow {name!r}: parallelism"),
        volumes={v["name"]: v for v in spec.get("volumes", [])},
        security_context=spec.get("securityContext") or {},
    )


def _refuse(obj: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    used = [f for f in fields if obj.get(f) is not None]
    if used:
        raise ManifestError(f"{where} uses {', '.join(used)}, which the local executor does not implement")


def _bind_parameters(name: str, spec: dict[str, Any], given: Mapping[str, str]) -> dict[str, str]:
    declared = {p["name"]: p for p in (spec.get("arguments") or {}).get("parameters", [])}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ManifestError(f"workflow {name!r} has no parameter(s) {', '.join(unknown)} (declared: {', '.join(declared)})")
    bound: dict[str, str] = {}
    for pname, param in declared.items():
        value = given.get(pname, param.get("value"))
        if value is None:
            raise ManifestError(f"workflow {name!r}: parameter {pname!r} has no value; pass it")
        value = str(value)
        if param.get("enum") and value not in [str(v) for v in param["enum"]]:
            raise ManifestError(f"workflow {name!r}: parameter {pname!r}={value!r} is not one of {param['enum']}")
        bound[pname] = value
    return bound


def _positive_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ManifestError(f"{where} must be an integer, got {value!r}") from None
    if number < 1:
        raise ManifestError(f"{where} must be at least 1, got {number}")
    return number


def retry_limit(template: dict[str, Any], where: str) -> int:
    """Extra attempts after a failure (``retryStrategy.limit``; 0 without a strategy)."""
    strategy = template.get("retryStrategy")
    if strategy is None:
        return 0
    if strategy.get("limit") is None:
        # Argo retries without end here; locally that would hide a broken step forever.
        raise ManifestError(f"{where}: retryStrategy needs a limit to run locally")
    try:
        limit = int(str(strategy["limit"]))
    except ValueError:
        raise ManifestError(f"{where}: retryStrategy.limit must be an integer, got {strategy['limit']!r}") from None
    if limit < 0:
        raise ManifestError(f"{where}: retryStrategy.limit must be at least 0, got {limit}")
    return limit


def retries(template: dict[str, Any], error: bool) -> bool:
    """Whether the template's retryPolicy retries this kind of failure.

    Argo tells a *failure* (the main container exited non-zero) from an *error* (the
    system around it broke). Locally, errors are: a process that cannot start, an
    artifact that cannot be downloaded or uploaded. Default policy: OnFailure.
    """
    policy = (template.get("retryStrategy") or {}).get("retryPolicy") or "OnFailure"
    if policy == "Always":
        return True
    if policy in ("OnError", "OnTransientError"):
        return error
    if policy == "OnFailure":
        return not error
    raise ManifestError(f"unknown retryPolicy {policy!r} (Always, OnFailure, OnError, OnTransientError)")


def parallelism(template: dict[str, Any], where: str) -> int | None:
    """The template's ``parallelism`` (bounds its DAG's concurrently running tasks)."""
    return _positive_int(template.get("parallelism"), f"{where}: parallelism")


def dependencies(task: dict[str, Any], known: Mapping[str, Any], where: str) -> list[str]:
    """The tasks ``task`` waits for, from ``dependencies`` or a ``depends`` of ``&&``-joined terms.

    ``A``, ``A.Succeeded``, ``A.Daemoned`` and ``A.Skipped`` all mean "A finished without
    failing" here; ``||``, ``!`` and ``.Failed``-style terms are refused.
    """
    if task.get("dependencies") is not None:
        names = list(task["dependencies"])
    elif task.get("depends"):
        names = []
        for term in str(task["depends"]).split("&&"):
            match = _DEPENDS_TERM.match(term.strip().strip("()").strip())
            if not match:
                raise ManifestError(
                    f"{where}: depends {task['depends']!r}: only 'a && b.Succeeded'-style terms are supported"
                )
            names.append(match.group(1))
    else:
        names = []
    missing = [n for n in names if n not in known]
    if missing:
        raise ManifestError(f"{where}: depends on unknown task(s) {', '.join(missing)}")
    return names


def check_acyclic(deps: Mapping[str, list[str]], where: str) -> None:
    """Refuse a DAG with a cycle (it would never finish)."""
    done: set[str] = set()
    remaining = dict(deps)
    while remaining:
        ready = [n for n, d in remaining.items() if all(x in done for x in d)]
        if not ready:
            raise ManifestError(f"{where}: dependency cycle among {', '.join(sorted(remaining))}")
        for name in ready:
            done.add(name)
            del remaining[name]
