"""What every check layer reports: one problem, where it is, and which layer saw it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

Layer = Literal["schema", "roundtrip", "lint"]


@dataclass(frozen=True)
class Finding:
    layer: Layer
    document: str  # "<Kind>/<name>"
    path: str  # "spec.templates[2].container.command"; "" for the document itself
    message: str

    def __str__(self) -> str:
        where = f"{self.document}: {self.path}" if self.path else self.document
        return f"[{self.layer}] {where}: {self.message}"


def document_id(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    return f"{doc.get('kind', '<no kind>')}/{name}"


def format_path(parts: Iterable[Any]) -> str:
    """JSON path parts -> ``spec.templates[2].name``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
