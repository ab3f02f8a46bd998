"""Lint across documents: a workflow that references a WorkflowTemplate must match it.

A CronWorkflow (or a Workflow) with ``workflowTemplateRef`` is only checked by Argo when it
runs, possibly hours after it was deployed: a misspelled template name or an argument the
template does not declare then fails every scheduled run. Both are checked here against
the WorkflowTemplates compiled alongside.
"""

from __future__ import annotations

from typing import Any

from pipelines.validate._findings import Finding, document_id, format_path


def _workflow_spec(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    if doc.get("kind") == "CronWorkflow":
        return spec.get("workflowSpec") or {}, ["spec", "workflowSpec"]
    return spec, ["spec"]


def reference_findings(docs: list[dict[str, Any]]) -> list[Finding]:
    """One finding per dangling ``workflowTemplateRef`` or undeclared argument of one."""
    templates = {
        (d.get("metadata") or {}).get("name"): d for d in docs if d.get("kind") == "WorkflowTemplate"
    }
    findings: list[Finding] = []
    for doc in docs:
        spec, path = _workflow_spec(doc)
        ref = spec.get("workflowTemplateRef")
        if not isinstance(ref, dict) or ref.get("clusterScope"):
            continue
        where = document_id(doc)
        target = templates.get(ref.get("name"))
        if target is None:
            known = ", ".join(sorted(map(str, templates))) or "none"
            message = f"references WorkflowTemplate {ref.get('name')!r}, which is not among the manifests ({known})"
            findings.append(Finding("lint", where, format_path(path + ["workflowTemplateRef", "name"]), message))
            continue
        declared = {p.get("name") for p in ((target.get("spec") or {}).get("arguments") or {}).get("parameters") or []}
        for index, parameter in enumerate((spec.get("arguments") or {}).get("parameters") or []):
            if parameter.get("name") not in declared:
                findings.append(
                    Finding(
                        "lint",
                        where,
                        format_path(path + ["arguments", "parameters", index]),
                        f"argument {parameter.get('name')!r} is not a parameter of WorkflowTemplate "
                        f"{ref.get('name')!r} (declared: {', '.join(sorted(map(str, declared))) or 'none'})",
                    )
                )
    return findings
