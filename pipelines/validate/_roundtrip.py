"""Layer 2: the manifest through Hera's pydantic models and back must come out unchanged.

Hera's models reject wrong types but silently drop unknown keys and coerce values
("3" -> 3); comparing the dump with the input exposes both.
"""

from __future__ import annotations

from typing import Any, Iterator

from pydantic import ValidationError

from pipelines.validate._findings import Finding, document_id, format_path


def _model_for(kind: Any) -> Any:
    from hera.workflows import models

    model = getattr(models, kind, None) if isinstance(kind, str) else None
    return model if isinstance(model, type) and hasattr(model, "model_validate") else None


def _differences(before: Any, after: Any, path: list[Any]) -> Iterator[tuple[list[Any], str]]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in before:
            if key not in after:
                yield path + [key], "dropped by Hera's model (unknown field?)"
            else:
                yield from _differences(before[key], after[key], path + [key])
        for key in after:
            if key not in before:
                yield path + [key], f"added by Hera's model: {after[key]!r}"
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (b, a) in enumerate(zip(before, after)):
            yield from _differences(b, a, path + [index])
    elif before != after or type(before) is not type(after):
        yield path, f"changed by Hera's model from {before!r} to {after!r}"


def roundtrip_findings(doc: dict[str, Any]) -> list[Finding]:
    """``<Kind>.model_validate(doc)`` then dump by alias without None: every difference is a finding."""
    where = document_id(doc)
    model = _model_for(doc.get("kind"))
    if model is None:
        return [Finding("roundtrip", where, "kind", f"Hera has no model for kind {doc.get('kind')!r}")]
    try:
        parsed = model.model_validate(doc)
    except ValidationError as exc:
        return [
            Finding("roundtrip", where, format_path(err["loc"]), f"{err['msg']} (got {err.get('input')!r:.60})")
            for err in exc.errors()
        ]
    dumped = parsed.model_dump(by_alias=True, exclude_none=True, mode="json")
    return [Finding("roundtrip", where, format_path(p), msg) for p, msg in _differences(doc, dumped, [])]
