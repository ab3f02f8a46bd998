"""All three layers together, as `openforge compile --check` runs them."""

from __future__ import annotations

from tests.pipelines._manifests import quickstart_manifest, quickstart_manifests, require_schema, task_path, template, template_path

from pipelines.validate import check_manifests


def test_compiled_manifests_pass_all_three_layers() -> None:
    assert check_manifests(quickstart_manifests(), require_schema()) == []


def test_without_the_schema_the_other_layers_still_run() -> None:
    doc = quickstart_manifest()
    template(doc, "generate")["parallelizm"] = 3
    template(doc, "iteration")["dag"]["tasks"][4]["depends"] = "trian"
    assert {f.layer for f in check_manifests([doc], None)} == {"roundtrip", "lint"}


def test_each_layer_reports_its_own_mistake() -> None:
    doc = quickstart_manifest()
    generate, serve, score = template_path(doc, "generate"), template_path(doc, "serve"), task_path(doc, "score")
    template(doc, "generate")["parallelizm"] = 3  # schema + round trip
    template(doc, "serve")["daemon"] = "yes"  # schema (type) + round trip (coerced)
    template(doc, "iteration")["dag"]["tasks"][2]["template"] = "scroe"  # lint only
    by_layer: dict[str, set[str]] = {}
    for finding in check_manifests([doc], require_schema()):
        by_layer.setdefault(finding.layer, set()).add(finding.path)
    assert by_layer == {
        "schema": {f"{generate}.parallelizm", f"{serve}.daemon"},
        "roundtrip": {f"{generate}.parallelizm", f"{serve}.daemon"},
        "lint": {f"{score}.template"},
    }
