"""Layer 1: Argo's published JSON schema, made strict, against each document's own kind.

As published, the schema lets misspelled fields through (no ``additionalProperties``) and
wrongly rejects integers where Kubernetes takes int-or-string; ``_make_strict`` fixes both.
The schema is vendored, unchanged, in ``schemas/`` (Argo Workflows v4.1.2's published
``api/jsonschema/schema.json``); ``schemas/README.md`` says where it came from and the
measurements behind each change.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from pipelines.validate._findings import Finding, document_id, format_path

SCHEMA_FILE = "argo-workflows-v4.1.2.schema.json"
_DEFS = "io.argoproj.workflow.v1alpha1"
_KINDS = ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow", "WorkflowEventBinding")
_WIDENED = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ["string", "integer"],
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ["string", "number"],
}
# Argo's AnyString (parameter values) also takes a list; the schema types it as a string.
_ANY_STRING_FIELDS = {f"{_DEFS}.Parameter": ("value", "default")}


class SchemaUnavailable(FileNotFoundError):
    """The schema file is not where it was looked for; the message says where and how to get it."""


def default_schema_path() -> Path:
    """The vendored schema, ``schemas/<SCHEMA_FILE>`` beside this module."""
    return Path(__file__).resolve().parent / "schemas" / SCHEMA_FILE


def _make_strict(schema: dict[str, Any]) -> dict[str, Any]:
    strict = copy.deepcopy(schema)
    definitions = strict["definitions"]
    for definition in definitions.values():
        if "properties" in definition:
            definition.setdefault("additionalProperties", False)
    for name, types in _WIDENED.items():
        definitions[name]["type"] = types
    for name, fields in _ANY_STRING_FIELDS.items():
        for field in fields:
            definitions[name]["properties"][field]["type"] = ["string", "array"]
    return strict


@lru_cache(maxsize=4)
def strict_definitions(path: Path) -> dict[str, Any]:
    """The strict schema's definitions (Kubernetes' types among them, which the resource check reuses)."""
    if not path.is_file():
        raise SchemaUnavailable(
            f"Argo's JSON schema is not at {path}; pass --schema PATH, or leave it out for the one "
            f"the project ships ({default_schema_path()})"
        )
    return _make_strict(json.loads(path.read_text()))["definitions"]


@lru_cache(maxsize=4)
def _validators(path: Path) -> dict[str, Draft202012Validator]:
    definitions = strict_definitions(path)
    return {
        kind: Draft202012Validator({"$ref": f"#/definitions/{_DEFS}.{kind}", "definitions": definitions})
        for kind in _KINDS
    }


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_error(error: ValidationError) -> list[tuple[list[Any], str]]:
    """(path, message) pairs a person can act on, without dumping whole sub-documents."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = error.schema.get("properties", {})
        return [
            (path + [key], "unknown field (misspelled? the schema does not define it here)")
            for key in sorted(k for k in error.instance if k not in allowed)
        ]
    if error.validator == "type":
        got = f"{type(error.instance).__name__} {_short(error.instance)}"
        return [(path, f"expected {error.validator_value}, got {got}")]
    if error.validator in ("enum", "const"):
        return [(path, f"{_short(error.instance)} is not one of {error.validator_value}")]
    if error.validator == "required":
        return [(path, error.message)]
    return [(path, f"{error.validator}: {error.message[:200]}")]


def schema_findings(doc: dict[str, Any], schema_path: Path | None = None) -> list[Finding]:
    """Validate one manifest against its kind's strict definition; raises SchemaUnavailable without the file."""
    validators = _validators((schema_path or default_schema_path()).resolve())
    where = document_id(doc)
    kind = doc.get("kind")
    if kind not in validators:
        return [Finding("schema", where, "kind", f"unknown kind {kind!r}: expected one of {sorted(validators)}")]
    return [
        Finding("schema", where, format_path(path), message)
        for error in sorted(validators[kind].iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        for path, message in describe_error(error)
    ]
