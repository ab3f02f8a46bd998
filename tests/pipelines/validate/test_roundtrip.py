"""Layer 2: a trip through Hera's models exposes dropped fields, coerced and wrong types."""

from __future__ import annotations

from tests.pipelines._manifests import quickstart_manifest, quickstart_manifests, template, template_path

from pipelines.validate import roundtrip_findings


def test_compiled_manifests_survive_the_round_trip_unchanged() -> None:
    for doc in quickstart_manifests():
        assert roundtrip_findings(doc) == [], doc["kind"]


def test_unknown_field_is_reported_as_dropped() -> None:
    doc = quickstart_manifest()
    template(doc, "generate")["parallelizm"] = 4
    (finding,) = roundtrip_findings(doc)
    assert finding.path == f"{template_path(doc, 'generate')}.parallelizm"
    assert "dropped by Hera's model" in finding.message


def test_snake_case_field_is_reported_as_renamed() -> None:
    doc = quickstart_manifest()
    doc["spec"]["service_account_name"] = doc["spec"].pop("serviceAccountName")
    messages = {f.path: f.message for f in roundtrip_findings(doc)}
    assert "dropped" in messages["spec.service_account_name"]
    assert "added" in messages["spec.serviceAccountName"]


def test_coerced_value_is_reported_as_changed() -> None:
    doc = quickstart_manifest()
    template(doc, "generate")["parallelism"] = "9"
    (finding,) = roundtrip_findings(doc)
    assert finding.path == f"{template_path(doc, 'generate')}.parallelism"
    assert finding.message == "changed by Hera's model from '9' to 9"


def test_wrong_type_is_rejected_by_the_models_with_its_location() -> None:
    doc = quickstart_manifest()
    template(doc, "generate")["parallelism"] = "three"
    findings = roundtrip_findings(doc)
    assert findings and all(f.layer == "roundtrip" for f in findings)
    assert findings[0].path.startswith(f"{template_path(doc, 'generate')}.parallelism")
    assert "'three'" in findings[0].message


def test_unknown_kind_has_no_model() -> None:
    doc = quickstart_manifest()
    doc["kind"] = "Pipeline"
    (finding,) = roundtrip_findings(doc)
    assert "no model for kind 'Pipeline'" in finding.message
