"""Layer 3: what neither the schema nor Hera's models check: references, scopes, enums and names.

Argo's controller rejects these at submission; there is no controller here, so the same
mistakes (a dangling template, ``depends`` on a task that does not exist, an undeclared
``{{inputs.parameters.X}}``) are caught before a manifest is committed or run locally.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from pipelines.validate._depends import DependsError, parse_depends
from pipelines.validate._findings import Finding, document_id, format_path

JsonPath = list[Any]

MAX_NAME = 63
# Argo appends an 11-character timestamp to a CronWorkflow's name for every run it starts.
MAX_CRON_NAME = 52
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ENUMS = {  # key -> allowed values, wherever the key appears
    "imagePullPolicy": ("Always", "IfNotPresent", "Never"),
    "concurrencyPolicy": ("Allow", "Forbid", "Replace"),
}
_NESTED_ENUMS = {  # (parent key, key) -> allowed values
    ("retryStrategy", "retryPolicy"): ("Always", "OnFailure", "OnError", "OnTransientError"),
    ("podGC", "strategy"): ("OnPodCompletion", "OnPodSuccess", "OnWorkflowCompletion", "OnWorkflowSuccess"),
}
_VARIABLE_ROOTS = {
    "inputs", "outputs", "workflow", "tasks", "steps", "item", "pod", "node",
    "retries", "lastRetry", "cronworkflow", "status", "exitCode", "duration",
}  # fmt: skip
_TAG = re.compile(r"\{\{\s*(=?)\s*([^{}]*?)\s*\}\}")
_NAME = r"([A-Za-z0-9_][-A-Za-z0-9_]*)"
_PARAM_REF = re.compile(rf"\b(inputs|workflow)\.(parameters|artifacts)\.{_NAME}")
_TASK_REF = re.compile(rf"\btasks\.{_NAME}(?:\.outputs\.parameters\.{_NAME})?")


def _tag(body: str) -> str:
    return "{{" + body + "}}"


def _strings(value: Any, path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, path + [key])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, path + [index])


def _variables(value: Any, path: JsonPath) -> Iterator[tuple[JsonPath, str, bool]]:
    """(path, tag body, is an ``{{=expression}}``) for every tag in the strings below ``value``."""
    for where, text in _strings(value, path):
        for match in _TAG.finditer(text):
            yield where, match.group(2), bool(match.group(1))


def _names(items: Any) -> list[str]:
    return [i.get("name") for i in items or [] if isinstance(i, dict)]


def _listed(names: Any) -> str:
    return ", ".join(sorted(map(str, names)))


class _Linter:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.where = document_id(doc)
        self.findings: list[Finding] = []
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        self.spec_path: JsonPath = ["spec"]
        if doc.get("kind") == "CronWorkflow":
            spec, self.spec_path = spec.get("workflowSpec") or {}, ["spec", "workflowSpec"]
        self.spec = spec
        self.template_list = [t for t in spec.get("templates") or [] if isinstance(t, dict)]
        self.templates = {t.get("name"): t for t in self.template_list}

    def add(self, path: JsonPath, message: str) -> None:
        self.findings.append(Finding("lint", self.where, format_path(path), message))

    def run(self) -> list[Finding]:
        self._check_names()
        self._check_template_refs()
        self._check_workflow_parameters()
        self._check_entrypoint_inputs()
        for index, template in enumerate(self.template_list):
            path = self.spec_path + ["templates", index]
            self._check_template_inputs(template, path)
            if isinstance(template.get("dag"), dict):
                _DagLinter(self, template["dag"], path + ["dag"]).run()
        self._check_enums(self.doc, [])
        return self.findings

    # -- names ---------------------------------------------------------------------------
    def _name(self, path: JsonPath, name: Any, what: str) -> None:
        if not isinstance(name, str) or not name:
            self.add(path, f"{what} has no name")
            return
        if len(name) > MAX_NAME:
            self.add(path, f"{what} name {name!r} has {len(name)} characters; at most {MAX_NAME} are allowed")
        if not _DNS1123_LABEL.match(name):
            self.add(
                path,
                f"{what} name {name!r} is not a DNS-1123 label: use lower-case letters, digits and '-', "
                "starting and ending with a letter or digit",
            )

    def _unique(self, path: JsonPath, names: list[str], what: str) -> None:
        for name in sorted({n for n in names if names.count(n) > 1}):
            self.add(path, f"{what} name {name!r} is used more than once")

    def _check_names(self) -> None:
        meta = self.doc.get("metadata") or {}
        if "name" in meta:
            self._name(["metadata", "name"], meta["name"], self.doc.get("kind", "object"))
            if self.doc.get("kind") == "CronWorkflow" and len(str(meta["name"])) > MAX_CRON_NAME:
                self.add(
                    ["metadata", "name"],
                    f"CronWorkflow name {meta['name']!r} has {len(str(meta['name']))} characters; at most "
                    f"{MAX_CRON_NAME} are allowed (Argo appends a timestamp to it for each run)",
                )
        self._unique(self.spec_path + ["templates"], _names(self.template_list), "template")
        for i, template in enumerate(self.template_list):
            path = self.spec_path + ["templates", i]
            self._name(path + ["name"], template.get("name"), "template")
            for j, sidecar in enumerate(template.get("sidecars") or []):
                self._name(path + ["sidecars", j, "name"], sidecar.get("name"), "sidecar")
            tasks = (template.get("dag") or {}).get("tasks") or []
            self._unique(path + ["dag", "tasks"], _names(tasks), "task")
            for j, task in enumerate(tasks):
                self._name(path + ["dag", "tasks", j, "name"], task.get("name"), "task")

    # -- references ----------------------------------------------------------------------
    def check_template_ref(self, path: JsonPath, name: Any) -> None:
        if name not in self.templates:
            self.add(path, f"template {name!r} is not defined (defined: {_listed(self.templates)})")

    def _check_template_refs(self) -> None:
        for key in ("entrypoint", "onExit"):
            if key in self.spec:
                self.check_template_ref(self.spec_path + [key], self.spec[key])
        for i, template in enumerate(self.template_list):
            for j, group in enumerate(template.get("steps") or []):
                for k, step in enumerate(group or []):
                    if "template" in step:
                        path = self.spec_path + ["templates", i, "steps", j, k, "template"]
                        self.check_template_ref(path, step["template"])

    def _check_workflow_parameters(self) -> None:
        declared = set(_names((self.spec.get("arguments") or {}).get("parameters")))
        for path, body, _ in _variables(self.doc, []):
            for scope, kind, name in _PARAM_REF.findall(body):
                if scope == "workflow" and kind == "parameters" and name not in declared:
                    ref = _tag(f"workflow.parameters.{name}")
                    self.add(path, f"{ref} is not declared in spec.arguments.parameters")

    def _check_entrypoint_inputs(self) -> None:
        """Argo gives the entrypoint's inputs the workflow arguments of the same name; one without
        a value or default there fails the workflow at submission."""
        entry = self.templates.get(self.spec.get("entrypoint"))
        if entry is None:
            return
        given = set(_names((self.spec.get("arguments") or {}).get("parameters")))
        for parameter in (entry.get("inputs") or {}).get("parameters") or []:
            name = parameter.get("name")
            if name not in given and "value" not in parameter and "default" not in parameter:
                self.add(
                    self.spec_path + ["arguments", "parameters"],
                    f"entrypoint {entry.get('name')!r} takes input {name!r}, which spec.arguments does not give",
                )

    def _check_template_inputs(self, template: dict[str, Any], path: JsonPath) -> None:
        inputs = template.get("inputs") or {}
        declared = {kind: set(_names(inputs.get(kind))) for kind in ("parameters", "artifacts")}
        for where, body, is_expression in _variables(template, path):
            root = re.split(r"[.\[]", body, maxsplit=1)[0]
            if not is_expression and root not in _VARIABLE_ROOTS:
                self.add(where, f"unknown variable {_tag(body)} (known roots: {_listed(_VARIABLE_ROOTS)})")
            for scope, kind, name in _PARAM_REF.findall(body):
                if scope == "inputs" and name not in declared[kind]:
                    self.add(
                        where,
                        f"{_tag(f'inputs.{kind}.{name}')} is not declared in template {template.get('name')!r} "
                        f"(inputs.{kind}: {_listed(declared[kind]) or 'none'})",
                    )

    # -- enums ---------------------------------------------------------------------------
    def _check_enums(self, value: Any, path: JsonPath) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                allowed = _ENUMS.get(key)
                if allowed and item not in allowed:
                    self.add(path + [key], f"{item!r} is not one of {list(allowed)}")
                for (parent, child), allowed in _NESTED_ENUMS.items():
                    if key == parent and isinstance(item, dict) and child in item and item[child] not in allowed:
                        self.add(path + [key, child], f"{item[child]!r} is not one of {list(allowed)}")
                self._check_enums(item, path + [key])
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self._check_enums(item, path + [index])


class _DagLinter:
    """One DAG template: task references in depends/dependencies, arguments and {{tasks.*}} variables."""

    def __init__(self, linter: _Linter, dag: dict[str, Any], path: JsonPath) -> None:
        self.linter, self.path = linter, path
        self.task_list = [t for t in dag.get("tasks") or [] if isinstance(t, dict)]
        self.tasks = {t.get("name"): t for t in self.task_list}
        self.target = dag.get("target")

    def run(self) -> None:
        parents: dict[str, set[str]] = {}
        for i, task in enumerate(self.task_list):
            path = self.path + ["tasks", i]
            parents[task.get("name")] = self._parents(task, path)
            if "template" in task:
                self.linter.check_template_ref(path + ["template"], task["template"])
                self._check_arguments(task, path)
        ancestors = {name: self._ancestors(name, parents) for name in parents}
        for i, task in enumerate(self.task_list):
            name = task.get("name")
            if name in ancestors[name]:
                self.linter.add(self.path + ["tasks", i], f"task {name!r} depends on itself (a cycle)")
            self._check_task_variables(task, self.path + ["tasks", i], ancestors[name])
        for target in (self.target or "").split():
            if target not in self.tasks:
                self.linter.add(self.path + ["target"], f"target {target!r} is not a task of this DAG")

    def _parents(self, task: dict[str, Any], path: JsonPath) -> set[str]:
        names: list[str] = []
        if "depends" in task and "dependencies" in task:
            self.linter.add(path, "use either depends or dependencies, not both")
        if "depends" in task:
            key = "depends"
            try:
                names = [ref.task for ref in parse_depends(task["depends"])]
            except DependsError as exc:
                self.linter.add(path + [key], f"depends does not parse: {exc}")
        else:
            key, names = "dependencies", list(task.get("dependencies") or [])
        for name in names:
            if name not in self.tasks:
                message = f"{key} names {name!r}, which is not a task of this DAG ({_listed(self.tasks)})"
                self.linter.add(path + [key], message)
        return {n for n in names if n in self.tasks}

    def _check_arguments(self, task: dict[str, Any], path: JsonPath) -> None:
        template = self.linter.templates.get(task["template"])
        if template is None:
            return
        inputs = (template.get("inputs") or {}).get("parameters") or []
        given = _names((task.get("arguments") or {}).get("parameters"))
        where = f"template {task['template']!r}"
        for name in given:
            if name not in _names(inputs):
                self.linter.add(path + ["arguments"], f"argument {name!r} is not an input of {where}")
        for parameter in inputs:
            if parameter.get("name") not in given and "value" not in parameter and "default" not in parameter:
                self.linter.add(path, f"input {parameter.get('name')!r} of {where} gets no argument")

    @staticmethod
    def _ancestors(name: str, parents: dict[str, set[str]]) -> set[str]:
        seen: set[str] = set()
        stack = list(parents.get(name, ()))
        while stack:
            current = stack.pop()
            if current not in seen:
                seen.add(current)
                stack.extend(parents.get(current, ()))
        return seen

    def _check_task_variables(self, task: dict[str, Any], path: JsonPath, ancestors: set[str]) -> None:
        loops = "withItems" in task or "withParam" in task
        for where, body, _ in _variables(task, path):
            if re.match(r"item\b", body) and not loops:
                self.linter.add(where, f"{_tag(body)} is used but the task has no withItems or withParam")
            for name, output in _TASK_REF.findall(body):
                self._check_task_ref(where, body, name, output, ancestors)

    def _check_task_ref(self, where: JsonPath, body: str, name: str, output: str, ancestors: set[str]) -> None:
        ref = _tag(body)
        if name not in self.tasks:
            self.linter.add(where, f"{ref} refers to task {name!r}, which is not in this DAG")
            return
        if name not in ancestors:
            self.linter.add(where, f"{ref} refers to task {name!r}, which this task does not depend on")
        template = self.linter.templates.get(self.tasks[name].get("template"))
        if template is None:  # dangling (reported above) or a templateRef (out of reach)
            return
        declared = _names((template.get("outputs") or {}).get("parameters"))
        if output and output not in declared:
            self.linter.add(where, f"{ref}: template {template.get('name')!r} declares no output parameter {output!r}")
        if body == f"tasks.{name}.ip" and not template.get("daemon"):
            self.linter.add(where, f"{ref}: template {template.get('name')!r} is not a daemon, its pod is gone by then")


def lint_findings(doc: dict[str, Any]) -> list[Finding]:
    """Semantic checks of one manifest: templates, depends, parameters, enums, DNS-1123 names."""
    return _Linter(doc).run()
