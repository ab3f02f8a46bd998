"""``llama3_json``: Llama 3's JSON tool calls, as vLLM 0.32's parser of that name reads them.

Every JSON object in the text (``<|python_tag|>`` optional, several joined by ``;``) is a
call ``{"name": ..., "parameters" or "arguments": {...}}``; text around them is dropped
once one parses. An object that does not parse, or lacks a name or arguments, leaves the
whole text as content and no calls. Streamed, content stops at the first ``{`` and each
call is sent whole once its object is complete.
"""

from __future__ import annotations

import json
from typing import Any

from components.core.parsers._base import Call, PartialCall, StreamView, ToolCallFormat, content_end

PYTHON_TAG = "<|python_tag|>"
_DECODER = json.JSONDecoder()


class Llama3Json(ToolCallFormat):
    name = "llama3_json"

    def extract(self, text: str, tools: list[dict[str, Any]] | None) -> tuple[str | None, list[Call]]:
        calls = _calls(text, complete_only=False)
        if not calls:
            return text, []
        return None, calls

    def view(self, text: str, final: bool, tools: list[dict[str, Any]] | None) -> StreamView:
        calls = _calls(text, complete_only=True) or []
        end = len(text) if final and not calls else content_end(text, False, "{", PYTHON_TAG)
        return StreamView(end, [PartialCall(call.name, call.arguments) for call in calls])


def _calls(text: str, complete_only: bool) -> list[Call] | None:
    """The calls, or None when an object breaks the format (finished text: all of it is content).

    ``complete_only``: the text is still growing, so an object not yet closed ends the list.
    """
    calls: list[Call] = []
    end = -1
    at = text.find("{")
    while at >= 0:
        if at > end:
            try:
                body, size = _DECODER.raw_decode(text, at)
            except json.JSONDecodeError:
                return calls if complete_only else None
            end = size
            if not isinstance(body, dict) or "name" not in body or not ("arguments" in body or "parameters" in body):
                return None
            arguments = body["arguments"] if "arguments" in body else body["parameters"]
            calls.append(Call(body["name"], json.dumps(arguments, ensure_ascii=False)))
        at = text.find("{", at + 1)
    return calls
