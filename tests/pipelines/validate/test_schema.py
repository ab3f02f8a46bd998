"""Layer 1: the strict Argo schema catches misspellings and wrong types, and accepts valid Argo."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines._manifests import quickstart_manifest, require_schema, template, template_path

from pipelines.validate import SchemaUnavailable, schema_findings

Doc = dict[str, Any]


def _rename(obj: Doc, old: str, new: str) -> None:
    obj[new] = obj.pop(old)


MISTAKES: dict[str, tuple[Callable[[Doc], None], Callable[[Doc], str]]] = {
    "misspelled DAG field": (
        lambda d: _rename(template(d, "generate"), "parallelism", "parallelizm"),
        lambda d: f"{template_path(d, 'generate')}.parallelizm",
    ),
    "misspelled container field": (
        lambda d: _rename(template(d, "score")["container"], "command", "comand"),
        lambda d: f"{template_path(d, 'score')}.container.comand",
    ),
    "snake_case spec field": (
        lambda d: d["spec"].update(node_selector={"gpu": "true"}),
        lambda d: "spec.node_selector",
    ),
    "field of the wrong object": (
        lambda d: template(d, "rollout")["sidecars"][0].update(daemon=True),
        lambda d: f"{template_path(d, 'rollout')}.sidecars[0].daemon",
    ),
    "misspelled semaphore reference": (
        lambda d: _rename(template(d, "train")["synchronization"]["semaphores"][0], "configMapKeyRef", "configMapRef"),
        lambda d: f"{template_path(d, 'train')}.synchronization.semaphores[0].configMapRef",
    ),
    "misspelled security context field": (
        lambda d: _rename(template(d, "rollout")["container"]["securityContext"], "readOnlyRootFilesystem", "readOnlyRootFileSystem"),
        lambda d: f"{template_path(d, 'rollout')}.container.securityContext.readOnlyRootFileSystem",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_strict_schema_names_each_unknown_field(mistake: str) -> None:
    schema = require_schema()
    doc = quickstart_manifest()
    mutate, where = MISTAKES[mistake]
    path = where(doc)
    mutate(doc)
    findings = schema_findings(doc, schema)
    assert [f.path for f in findings] == [path]
    assert "unknown field" in findings[0].message
    assert str(findings[0]).startswith(f"[schema] WorkflowTemplate/quickstart-iteration: {path}: ")


def test_wrong_type_is_reported_with_the_expected_type() -> None:
    schema = require_schema()
    doc = quickstart_manifest()
    template(doc, "serve")["daemon"] = "yes"
    (finding,) = schema_findings(doc, schema)
    assert finding.path == f"{template_path(doc, 'serve')}.daemon"
    assert finding.message == "expected boolean, got str 'yes'"


def test_valid_int_or_string_quantity_and_list_values_are_accepted() -> None:
    # As published the schema types these as strings and would flag valid manifests.
    schema = require_schema()
    doc = quickstart_manifest()
    train = template(doc, "train")
    train["activeDeadlineSeconds"] = 1800
    train["container"]["resources"] = {"limits": {"cpu": 2, "memory": "4Gi"}}
    doc["spec"]["arguments"]["parameters"].append({"name": "extra", "value": ["a", "b"]})
    assert schema_findings(doc, schema) == []


def test_each_document_is_checked_against_its_own_kind() -> None:
    schema = require_schema()
    doc = quickstart_manifest()
    doc["kind"] = "Workflow"
    assert schema_findings(doc, schema) == []  # a template's spec is a valid Workflow spec
    doc["kind"] = "CronWorkflow"
    findings = {f.path: f.message for f in schema_findings(doc, schema)}
    assert "unknown field" in findings["spec.templates"]  # a CronWorkflow has them in spec.workflowSpec
    doc["kind"] = "Pipeline"
    (finding,) = schema_findings(doc, schema)
    assert finding.path == "kind" and "unknown kind 'Pipeline'" in finding.message


def test_missing_schema_file_raises_with_where_it_looked(tmp_path: Path) -> None:
    missing = tmp_path / "schema.json"
    with pytest.raises(SchemaUnavailable, match=str(missing)):
        schema_findings(quickstart_manifest(), missing)


def test_cron_and_bounded_workflow_pass_the_strict_schema() -> None:
    schema = require_schema()
    for kind in ("CronWorkflow", "Workflow"):
        assert schema_findings(quickstart_manifest(kind), schema) == [], kind


def test_cron_with_the_removed_singular_schedule_is_refused() -> None:
    # Argo v4 dropped `schedule`; a cron written for v3 would never run.
    schema = require_schema()
    doc = quickstart_manifest("CronWorkflow")
    doc["spec"]["schedule"] = doc["spec"].pop("schedules")[0]
    findings = {f.path: f.message for f in schema_findings(doc, schema)}
    assert "unknown field" in findings["spec.schedule"]
    assert "schedules" in findings["spec"]


def test_bounded_workflow_misspelling_is_named() -> None:
    schema = require_schema()
    doc = quickstart_manifest("Workflow")
    _rename(doc["spec"], "ttlStrategy", "ttlStrategey")
    assert [f.path for f in schema_findings(doc, schema)] == ["spec.ttlStrategey"]
