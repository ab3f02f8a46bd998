"""Layer 1 for what resource templates create: each ``resource.manifest``, as Argo will
send it to the API server, against its kind's schema, made strict.

Argo's schema types a resource template's manifest as a string, so a RayJob with a
misspelled field would compile, pass every Argo check and fail only on the cluster, at
the train step, after the rollouts. The one kind the workflows create is KubeRay's
RayJob (pipelines/ray_job.py): its CRD's ``openAPIV3Schema`` is vendored in ``schemas/``
(schemas/README.md says from where). Strict as the Argo schema is made: every object that
lists its properties refuses others, unless the CRD keeps unknown fields on purpose
(``x-kubernetes-preserve-unknown-fields``). The CRD leaves ``metadata`` open; it is checked
as Kubernetes' ObjectMeta from the Argo schema's definitions. The CRD's CEL rules
(``x-kubernetes-validations``) are the API server's to run and are not checked here.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from pipelines.validate._findings import Finding, document_id, format_path
from pipelines.validate._schema import default_schema_path, describe_error, strict_definitions

RAY_JOB_SCHEMA_FILE = "kuberay-rayjob-v1.schema.json"
_SCHEMAS = {("ray.io/v1", "RayJob"): RAY_JOB_SCHEMA_FILE}
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# An expression tag standing where a value goes (`"value": {{=toJson(...)}}`): Argo writes a
# JSON value there. Simple tags sit inside strings and stay as they are.
_BARE_EXPRESSION = re.compile(r"\{\{=[^}]*\}\}")


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        closed = {key: _strict(value) for key, value in schema.items()}
        if "properties" in closed and "additionalProperties" not in closed and not closed.get("x-kubernetes-preserve-unknown-fields"):
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


@lru_cache(maxsize=4)
def _validator(file: str, argo_schema: Path) -> Draft202012Validator:
    schema = _strict(json.loads((Path(__file__).resolve().parent / "schemas" / file).read_text()))
    definitions = strict_definitions(argo_schema)
    schema["properties"]["metadata"] = {"$ref": f"#/definitions/{_OBJECT_META}"}
    schema["definitions"] = definitions
    return Draft202012Validator(schema)


def _as_created(text: str) -> Any:
    """The manifest once Argo has filled its expression tags (with a string: the config's JSON)."""
    return yaml.safe_load(_BARE_EXPRESSION.sub(json.dumps("name: x\nline: 2\n"), text))


def resource_findings(doc: dict[str, Any], argo_schema: Path | None = None) -> list[Finding]:
    """Every resource template's manifest in ``doc``, parsed and checked against its kind's schema
    (``argo_schema``: where Kubernetes' ObjectMeta is defined; the shipped Argo schema by default)."""
    where = document_id(doc)
    templates = (doc.get("spec") or {}).get("templates") or []
    if doc.get("kind") == "CronWorkflow":
        templates = ((doc.get("spec") or {}).get("workflowSpec") or {}).get("templates") or []
    findings: list[Finding] = []
    for index, template in enumerate(templates):
        resource = template.get("resource") if isinstance(template, dict) else None
        if not isinstance(resource, dict) or not isinstance(resource.get("manifest"), str):
            continue
        path = f"spec.templates[{index}].resource.manifest"
        try:
            manifest = _as_created(resource["manifest"])
        except yaml.YAMLError as exc:
            findings.append(Finding("schema", where, path, f"not YAML once Argo fills its tags: {exc}"))
            continue
        kind = (manifest.get("apiVersion"), manifest.get("kind")) if isinstance(manifest, dict) else (None, None)
        if kind not in _SCHEMAS:
            known = ", ".join(f"{api} {k}" for api, k in _SCHEMAS)
            findings.append(Finding("schema", where, path, f"creates {kind[0]} {kind[1]}: no schema to check it (known: {known})"))
            continue
        errors = sorted(_validator(_SCHEMAS[kind], (argo_schema or default_schema_path()).resolve()).iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))
        findings += [
            Finding("schema", where, f"{path}: {format_path(inner)}", message)
            for error in errors
            for inner, message in describe_error(error)
        ]
    return findings
