"""All three layers over a set of manifests: what `openforge compile --check` and the tests run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.validate._findings import Finding
from pipelines.validate._lint import lint_findings
from pipelines.validate._references import reference_findings
from pipelines.validate._resources import resource_findings
from pipelines.validate._roundtrip import roundtrip_findings
from pipelines.validate._schema import schema_findings


def check_manifests(docs: list[dict[str, Any]], schema_path: Path | None) -> list[Finding]:
    """Schema (skipped when ``schema_path`` is None; what resource templates create included), Hera round trip and lint findings, in that
    order per document, then the references between documents (lint).

    Raises SchemaUnavailable when ``schema_path`` is given but absent.
    """
    findings: list[Finding] = []
    for doc in docs:
        if schema_path is not None:
            findings += schema_findings(doc, schema_path)
            findings += resource_findings(doc, schema_path)
        findings += roundtrip_findings(doc)
        findings += lint_findings(doc)
    return findings + reference_findings(docs)
