"""Layer 3: mistakes only a semantic lint sees (the schema and Hera's models accept them all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.pipelines._manifests import (
    dag_task,
    quickstart_manifest,
    quickstart_manifests,
    require_schema,
    task_path,
    template,
    template_path,
)

from pipelines.validate import lint_findings, reference_findings, roundtrip_findings, schema_findings

Doc = dict[str, Any]


def _drop_input(doc: Doc, tmpl: str, name: str) -> None:
    params = template(doc, tmpl)["inputs"]["parameters"]
    params[:] = [p for p in params if p["name"] != name]


def _set_command_arg(doc: Doc, tmpl: str, index: int, value: str) -> None:
    template(doc, tmpl)["container"]["command"][index] = value


T, K = template_path, task_path

# mistake -> (mutation, path of the finding (from the unmutated doc), words its message must contain)
MISTAKES: dict[str, tuple[Callable[[Doc], None], Callable[[Doc], str], str]] = {
    "dangling template": (
        lambda d: dag_task(d, "score").update(template="scroe"),
        lambda d: f"{K(d, 'score')}.template",
        "template 'scroe' is not defined",
    ),
    "dangling entrypoint": (
        lambda d: d["spec"].update(entrypoint="main"),
        lambda d: "spec.entrypoint",
        "template 'main' is not defined",
    ),
    "dangling exit handler": (
        lambda d: d["spec"].update(onExit="exit-hook"),
        lambda d: "spec.onExit",
        "template 'exit-hook' is not defined",
    ),
    "depends on an unknown task": (
        lambda d: dag_task(d, "train").update(depends="scoring"),
        lambda d: f"{K(d, 'train')}.depends",
        "depends names 'scoring', which is not a task of this DAG",
    ),
    "depends that does not parse": (
        lambda d: dag_task(d, "train").update(depends="score &&"),
        lambda d: f"{K(d, 'train')}.depends",
        "depends does not parse",
    ),
    "depends on an unknown result": (
        lambda d: dag_task(d, "score").update(depends="generate.Finished"),
        lambda d: f"{K(d, 'score')}.depends",
        "unknown task result 'Finished'",
    ),
    "dependencies on an unknown task": (
        lambda d: dag_task(d, "commit").update(dependencies=["trian"]) or dag_task(d, "commit").pop("depends"),
        lambda d: f"{K(d, 'commit')}.dependencies",
        "dependencies names 'trian'",
    ),
    "cycle": (
        lambda d: dag_task(d, "prepare").update(depends="commit"),
        lambda d: K(d, "prepare"),
        "depends on itself (a cycle)",
    ),
    "undeclared input parameter": (
        lambda d: _drop_input(d, "rollout", "serve-address"),
        lambda d: f"{T(d, 'rollout')}.sidecars[0].command[3]",
        "{{inputs.parameters.serve-address}} is not declared in template 'rollout'",
    ),
    "undeclared workflow parameter": (
        lambda d: _set_command_arg(d, "prepare", 4, "{{workflow.parameters.iter}}"),
        lambda d: f"{T(d, 'prepare')}.container.command[4]",
        "{{workflow.parameters.iter}} is not declared",
    ),
    "misspelled variable root": (
        lambda d: _set_command_arg(d, "score", 4, "{{input.parameters.iteration}}"),
        lambda d: f"{T(d, 'score')}.container.command[4]",
        "unknown variable {{input.parameters.iteration}}",
    ),
    "undeclared task output": (
        lambda d: dag_task(d, "generate").update(when="{{tasks.prepare.outputs.parameters.generat}} == true"),
        lambda d: f"{K(d, 'generate')}.when",
        "declares no output parameter 'generat'",
    ),
    "task output from a task not depended on": (
        lambda d: dag_task(d, "rollout").pop("depends"),
        lambda d: f"{K(d, 'rollout')}.arguments.parameters[4].value",
        "refers to task 'serve', which this task does not depend on",
    ),
    "argument the template does not take": (
        lambda d: dag_task(d, "rollout")["arguments"]["parameters"].append({"name": "seed", "value": "1"}),
        lambda d: f"{K(d, 'rollout')}.arguments",
        "argument 'seed' is not an input of template 'rollout'",
    ),
    "input the task does not give": (
        lambda d: dag_task(d, "score").pop("arguments"),
        lambda d: K(d, "score"),
        "input 'iteration' of template 'score' gets no argument",
    ),
    "entrypoint input without a workflow argument": (
        lambda d: d["spec"]["arguments"]["parameters"].pop(0),
        lambda d: "spec.arguments.parameters",
        "entrypoint 'iteration' takes input 'iteration', which spec.arguments does not give",
    ),
    "bad podGC strategy": (
        lambda d: d["spec"]["podGC"].update(strategy="OnSuccess"),
        lambda d: "spec.podGC.strategy",
        "'OnSuccess' is not one of",
    ),
    "bad retryPolicy": (
        lambda d: template(d, "train")["retryStrategy"].update(retryPolicy="Sometimes"),
        lambda d: f"{T(d, 'train')}.retryStrategy.retryPolicy",
        "'Sometimes' is not one of",
    ),
    "bad imagePullPolicy": (
        lambda d: template(d, "train")["container"].update(imagePullPolicy="always"),
        lambda d: f"{T(d, 'train')}.container.imagePullPolicy",
        "'always' is not one of ['Always', 'IfNotPresent', 'Never']",
    ),
    "bad concurrencyPolicy": (
        lambda d: d["spec"].update(concurrencyPolicy="Never"),
        lambda d: "spec.concurrencyPolicy",
        "'Never' is not one of ['Allow', 'Forbid', 'Replace']",
    ),
    "upper-case template name": (
        lambda d: template(d, "commit").update(name="Commit") or dag_task(d, "commit").update(template="Commit"),
        lambda d: f"{T(d, 'commit')}.name",
        "template name 'Commit' is not a DNS-1123 label",
    ),
    "64-character workflow name": (
        lambda d: d["metadata"].update(name="a" * 64),
        lambda d: "metadata.name",
        "has 64 characters; at most 63 are allowed",
    ),
    "duplicate task name": (
        lambda d: dag_task(d, "commit").update(name="train", depends="score"),
        lambda d: f"{T(d, 'iteration')}.dag.tasks",
        "task name 'train' is used more than once",
    ),
}


def _mutated(mistake: str) -> tuple[Doc, str, str]:
    doc = quickstart_manifest()
    mutate, where, words = MISTAKES[mistake]
    path = where(doc)
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


def test_cron_and_bounded_workflow_are_lint_clean() -> None:
    for kind in ("CronWorkflow", "Workflow"):
        assert lint_findings(quickstart_manifest(kind)) == [], kind


def test_lint_catches_a_cron_name_argo_cannot_suffix() -> None:
    doc = quickstart_manifest("CronWorkflow")
    doc["metadata"]["name"] = "c" * 53
    (finding,) = lint_findings(doc)
    assert finding.path == "metadata.name" and "at most 52" in finding.message


def test_lint_catches_a_bounded_iteration_chained_to_an_unknown_one() -> None:
    doc = quickstart_manifest("Workflow")
    path = task_path(doc, "iteration-2")
    dag_task(doc, "iteration-2").update(depends="iteration-9")
    (finding,) = lint_findings(doc)
    assert finding.path == f"{path}.depends" and "'iteration-9'" in finding.message


def test_references_catch_a_cron_pointing_at_a_missing_template_or_parameter() -> None:
    docs = quickstart_manifests()
    cron = next(d for d in docs if d["kind"] == "CronWorkflow")
    spec = cron["spec"]["workflowSpec"]
    spec["arguments"]["parameters"][0]["name"] = "iter"
    (finding,) = reference_findings(docs)
    assert finding.path == "spec.workflowSpec.arguments.parameters[0]" and "'iter' is not a parameter" in finding.message
    spec["workflowTemplateRef"]["name"] = "quickstart-iteratoin"
    (finding,) = reference_findings(docs)
    assert finding.path == "spec.workflowSpec.workflowTemplateRef.name" and "not among the manifests" in finding.message
    # Neither mistake is visible to the document-level checks.
    assert lint_findings(cron) == [] and roundtrip_findings(cron) == []
