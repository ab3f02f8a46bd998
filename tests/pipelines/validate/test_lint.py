"""Layer 3: mistakes only a semantic lint sees (the schema and Hera's models accept them all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.pipelines._manifests import dag_task, quickstart_manifest, require_schema, template

from pipelines.validate import lint_findings, roundtrip_findings, schema_findings

Doc = dict[str, Any]


def _drop_input(doc: Doc, tmpl: str, name: str) -> None:
    params = template(doc, tmpl)["inputs"]["parameters"]
    params[:] = [p for p in params if p["name"] != name]


def _set_command_arg(doc: Doc, tmpl: str, index: int, value: str) -> None:
    template(doc, tmpl)["container"]["command"][index] = value


# mistake -> (mutation, path of the finding, words its message must contain)
MISTAKES: dict[str, tuple[Callable[[Doc], None], str, str]] = {
    "dangling template": (
        lambda d: dag_task(d, "score").update(template="scroe"),
        "spec.templates[0].dag.tasks[3].template",
        "template 'scroe' is not defined",
    ),
    "dangling entrypoint": (
        lambda d: d["spec"].update(entrypoint="main"),
        "spec.entrypoint",
        "template 'main' is not defined",
    ),
    "depends on an unknown task": (
        lambda d: dag_task(d, "train").update(depends="scoring"),
        "spec.templates[0].dag.tasks[4].depends",
        "depends names 'scoring', which is not a task of this DAG",
    ),
    "depends that does not parse": (
        lambda d: dag_task(d, "train").update(depends="score &&"),
        "spec.templates[0].dag.tasks[4].depends",
        "depends does not parse",
    ),
    "depends on an unknown result": (
        lambda d: dag_task(d, "score").update(depends="rollout.Finished"),
        "spec.templates[0].dag.tasks[3].depends",
        "unknown task result 'Finished'",
    ),
    "dependencies on an unknown task": (
        lambda d: dag_task(d, "commit").update(dependencies=["trian"]) or dag_task(d, "commit").pop("depends"),
        "spec.templates[0].dag.tasks[5].dependencies",
        "dependencies names 'trian'",
    ),
    "cycle": (
        lambda d: dag_task(d, "prepare").update(depends="commit"),
        "spec.templates[0].dag.tasks[0]",
        "depends on itself (a cycle)",
    ),
    "undeclared input parameter": (
        lambda d: _drop_input(d, "rollout", "serve-address"),
        "spec.templates[3].sidecars[0].command[3]",
        "{{inputs.parameters.serve-address}} is not declared in template 'rollout'",
    ),
    "undeclared workflow parameter": (
        lambda d: _set_command_arg(d, "prepare", 4, "{{workflow.parameters.iter}}"),
        "spec.templates[1].container.command[4]",
        "{{workflow.parameters.iter}} is not declared",
    ),
    "misspelled variable root": (
        lambda d: _set_command_arg(d, "score", 4, "{{workflows.parameters.iteration}}"),
        "spec.templates[4].container.command[4]",
        "unknown variable {{workflows.parameters.iteration}}",
    ),
    "undeclared task output": (
        lambda d: dag_task(d, "rollout").update(withParam="{{tasks.prepare.outputs.parameters.rollout}}"),
        "spec.templates[0].dag.tasks[2].withParam",
        "declares no output parameter 'rollout'",
    ),
    "task output from a task not depended on": (
        lambda d: dag_task(d, "rollout").update(depends="prepare"),
        "spec.templates[0].dag.tasks[2].arguments.parameters[2].value",
        "refers to task 'serve', which this task does not depend on",
    ),
    "argument the template does not take": (
        lambda d: dag_task(d, "rollout")["arguments"]["parameters"].append({"name": "seed", "value": "1"}),
        "spec.templates[0].dag.tasks[2].arguments",
        "argument 'seed' is not an input of template 'rollout'",
    ),
    "bad podGC strategy": (
        lambda d: d["spec"]["podGC"].update(strategy="OnSuccess"),
        "spec.podGC.strategy",
        "'OnSuccess' is not one of",
    ),
    "bad retryPolicy": (
        lambda d: template(d, "train")["retryStrategy"].update(retryPolicy="Sometimes"),
        "spec.templates[5].retryStrategy.retryPolicy",
        "'Sometimes' is not one of",
    ),
    "bad imagePullPolicy": (
        lambda d: template(d, "train")["container"].update(imagePullPolicy="always"),
        "spec.templates[5].container.imagePullPolicy",
        "'always' is not one of ['Always', 'IfNotPresent', 'Never']",
    ),
    "bad concurrencyPolicy": (
        lambda d: d["spec"].update(concurrencyPolicy="Never"),
        "spec.concurrencyPolicy",
        "'Never' is not one of ['Allow', 'Forbid', 'Replace']",
    ),
    "upper-case template name": (
        lambda d: template(d, "commit").update(name="Commit") or dag_task(d, "commit").update(template="Commit"),
        "spec.templates[6].name",
        "template name 'Commit' is not a DNS-1123 label",
    ),
    "64-character workflow name": (
        lambda d: d["metadata"].update(name="a" * 64),
        "metadata.name",
        "has 64 characters; at most 63 are allowed",
    ),
    "duplicate task name": (
        lambda d: dag_task(d, "commit").update(name="train", depends="score"),
        "spec.templates[0].dag.tasks",
        "task name 'train' is used more than once",
    ),
}


def _mutated(mistake: str) -> tuple[Doc, str, str]:
    doc = quickstart_manifest()
    mutate, path, words = MISTAKES[mistake]
    mutate(doc)
    return doc, path, words


def test_compiled_manifest_is_lint_clean() -> None:
    assert lint_findings(quickstart_manifest()) == []


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_lint_catches(mistake: str) -> None:
    doc, path, words = _mutated(mistake)
    findings = lint_findings(doc)
    assert any(f.path == path and words in f.message for f in findings), "\n".join(map(str, findings))


@pytest.mark.parametrize(
    "mistake", ["dangling template", "depends on an unknown task", "undeclared input parameter", "cycle"]
)
def test_only_the_lint_catches(mistake: str) -> None:
    # These pass the strict schema and Hera's models: without the lint they reach the cluster.
    schema = require_schema()
    doc, _, _ = _mutated(mistake)
    assert schema_findings(doc, schema) == []
    assert roundtrip_findings(doc) == []
    assert lint_findings(doc)
