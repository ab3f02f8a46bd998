"""Chat message content built from another API's blocks: text, and images the engine must see.

Text-only content stays one string, its pieces joined with newlines (vLLM's rule for text
parts), so image-free translations are unchanged. Once an image is present the content
becomes chat content parts in block order (``text`` and ``image_url``), which vLLM passes
to a multimodal model's processor and the dev engine renders as placeholders.
"""

from __future__ import annotations

from typing import Any

TEXT_JOIN = "\n"


class ChatContent:
    """The content of one chat message under construction."""

    def __init__(self) -> None:
        self._parts: list[dict[str, Any]] = []
        self._has_image = False

    def text(self, text: str) -> None:
        self._parts.append({"type": "text", "text": text})

    def image(self, url: str, detail: Any = None) -> None:
        self._parts.append(image_part(url, detail))
        self._has_image = True

    def images(self, parts: list[dict[str, Any]]) -> None:
        """Image parts gathered elsewhere (tool results), in their order."""
        for part in parts:
            self._parts.append(part)
            self._has_image = True

    def parts(self) -> list[dict[str, Any]]:
        return self._parts

    def __bool__(self) -> bool:
        return bool(self._parts)

    def value(self) -> str | list[dict[str, Any]]:
        if not self._has_image:
            return TEXT_JOIN.join(part["text"] for part in self._parts)
        return self._parts


def image_part(url: str, detail: Any = None) -> dict[str, Any]:
    """A chat ``image_url`` part (``detail`` kept when the harness gave one)."""
    image: dict[str, Any] = {"url": url}
    if isinstance(detail, str):
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}
