"""``mistral``: ``[TOOL_CALLS]`` tool calls, as vLLM 0.32's parser of that name reads them.

Two generations of the format: tokenizers v11+ write ``[TOOL_CALLS]NAME[ARGS]{...}`` (or
``[TOOL_CALLS]NAME{...}``) once per call; older ones write ``[TOOL_CALLS]`` and a JSON
array of ``{"name", "arguments"}`` objects. vLLM picks by the tokenizer's vocabulary
(``[ARGS]`` in it or not); a name never starts with ``[`` or ``{``, so the text tells
the same here. Text before the first ``[TOOL_CALLS]`` is the content. Ids are Mistral's
9 letters and digits. Streamed, each call is sent whole once its JSON is complete.
"""

from __future__ import annotations

import json
import re
from typing import Any

from components.core.parsers._base import (
    Call,
    PartialCall,
    StreamView,
    ToolCallFormat,
    content_end,
    short_tool_call_id,
)

MARKER, ARGS = "[TOOL_CALLS]", "[ARGS]"
_DECODER = json.JSONDecoder()
_ARRAY = re.compile(r"\[{.*}\]", re.DOTALL)


class Mistral(ToolCallFormat):
    name = "mistral"

    def new_id(self) -> str:
        return short_tool_call_id()

    def extract(self, text: str, tools: list[dict[str, Any]] | None) -> tuple[str | None, list[Call]]:
        if MARKER not in text:
            return text, []
        content, *segments = text.split(MARKER)
        if _is_array_format(segments):
            return _array_calls(content, segments)
        calls = [call for segment in segments if (call := _named_call(segment, final=True)) is not None]
        content = content.strip() if calls else content
        return content or None, calls

    def view(self, text: str, final: bool, tools: list[dict[str, Any]] | None) -> StreamView:
        view = StreamView(content_end(text, final, MARKER))
        if MARKER not in text:
            return view
        content, *segments = text.split(MARKER)
        if _is_array_format(segments):
            if final:
                view.calls = [PartialCall(c.name, c.arguments) for c in _array_calls(content, segments)[1]]
            return view
        for index, segment in enumerate(segments):
            call = _named_call(segment, final=final or index < len(segments) - 1)
            if call is None:
                break
            view.calls.append(PartialCall(call.name, call.arguments))
        return view


def _is_array_format(segments: list[str]) -> bool:
    first = next((segment.strip() for segment in segments if segment.strip()), "")
    return first[:1] in ("[", "{")


def _array_calls(content: str, segments: list[str]) -> tuple[str | None, list[Call]]:
    """The older format: one JSON array after the first non-empty marker; later text is not read."""
    body = next((segment.strip() for segment in segments if segment.strip()), "")
    try:
        parsed: Any = _DECODER.raw_decode(body)[0]
    except json.JSONDecodeError:
        found = _ARRAY.findall(body)
        try:
            parsed = json.loads(found[0]) if found else None
        except json.JSONDecodeError:
            parsed = None
    parsed = [parsed] if isinstance(parsed, dict) else parsed
    calls = []
    for item in parsed if isinstance(parsed, list) else ():
        if not isinstance(item, dict) or not ("name" in item or "arguments" in item):
            continue
        name, arguments = item.get("name"), item.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(Call(name if isinstance(name, str) else "", arguments))
    if not calls:
        return body or None, []
    return (content if content.strip() else None), calls


def _named_call(segment: str, final: bool) -> Call | None:
    """``NAME[ARGS]{...}`` or ``NAME{...}``; None until the text so far holds the whole call."""
    cut = [at for at in (segment.find(ARGS), segment.find("{")) if at >= 0]
    if not cut:
        return Call(segment.strip(), "{}") if final and segment.strip() else None
    at = min(cut)
    name = segment[:at].strip()
    raw = (segment[at + len(ARGS) :] if segment.startswith(ARGS, at) else segment[at:]).strip()
    if not raw:
        return Call(name, "{}") if final else None
    try:
        end = _DECODER.raw_decode(raw)[1]
    except json.JSONDecodeError:
        return Call(name, raw) if final else None
    return Call(name, raw[:end])
