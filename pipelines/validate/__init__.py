"""Checks of compiled Argo manifests, in three layers: strict JSON schema, Hera round trip, lint.

Exports load on first use (``components.core.lazy``): the schema layer loads jsonschema
and the round trip Hera, which a caller of one check alone (or ``openforge --help``) skips.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "check_manifests": "pipelines.validate._check:check_manifests",
        "DependsError": "pipelines.validate._depends:DependsError",
        "DependsRef": "pipelines.validate._depends:DependsRef",
        "parse_depends": "pipelines.validate._depends:parse_depends",
        "Finding": "pipelines.validate._findings:Finding",
        "lint_findings": "pipelines.validate._lint:lint_findings",
        "reference_findings": "pipelines.validate._references:reference_findings",
        "roundtrip_findings": "pipelines.validate._roundtrip:roundtrip_findings",
        "SchemaUnavailable": "pipelines.validate._schema:SchemaUnavailable",
        "default_schema_path": "pipelines.validate._schema:default_schema_path",
        "schema_findings": "pipelines.validate._schema:schema_findings",
    },
)
