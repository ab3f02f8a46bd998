"""Checks of compiled Argo manifests, in three layers: strict JSON schema, Hera round trip, lint."""

from pipelines.validate._check import check_manifests
from pipelines.validate._depends import DependsError, DependsRef, parse_depends
from pipelines.validate._findings import Finding
from pipelines.validate._lint import lint_findings
from pipelines.validate._references import reference_findings
from pipelines.validate._roundtrip import roundtrip_findings
from pipelines.validate._schema import SchemaUnavailable, default_schema_path, schema_findings

__all__ = [
    "DependsError",
    "DependsRef",
    "Finding",
    "SchemaUnavailable",
    "check_manifests",
    "default_schema_path",
    "lint_findings",
    "parse_depends",
    "reference_findings",
    "roundtrip_findings",
    "schema_findings",
]
