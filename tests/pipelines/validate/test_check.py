"""All three layers together, as `openforge compile --check` runs them."""

from __future__ import annotations

from tests.pipelines._manifests import quickstart_manifest, require_schema, template

from pipelines.validate import check_manifests


def test_compiled_manifests_pass_all_three_layers() -> None:
    assert check_manifests([quickstart_manifest()], require_schema()) == []


def test_without_the_schema_the_other_layers_still_run() -> None:
    doc = quickstart_manifest()
    template(doc, "iteration")["parallelizm"] = 3
    dag = template(doc, "iteration")["dag"]
    dag["tasks"][1]["depends"] = "prepar"
    assert {f.layer for f in check_manifests([doc], None)} == {"roundtrip", "lint"}


def test_each_layer_reports_its_own_mistake() -> None:
    doc = quickstart_manifest()
    template(doc, "iteration")["parallelizm"] = 3  # schema + round trip
    template(doc, "serve")["daemon"] = "yes"  # schema (type) + round trip (coerced)
    template(doc, "iteration")["dag"]["tasks"][1]["depends"] = "prepar"  # lint only
    by_layer: dict[str, set[str]] = {}
    for finding in check_manifests([doc], require_schema()):
        by_layer.setdefault(finding.layer, set()).add(finding.path)
    assert by_layer == {
        "schema": {"spec.templates[0].parallelizm", "spec.templates[2].daemon"},
        "roundtrip": {"spec.templates[0].parallelizm", "spec.templates[2].daemon"},
        "lint": {"spec.templates[0].dag.tasks[1].depends"},
    }
