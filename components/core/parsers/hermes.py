"""``hermes``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen2.5, Hermes 2 Pro).

As vLLM's ``hermes`` parser reads it: text before the first ``<tool_call>`` is the content;
a call whose JSON does not parse leaves the whole text as content and no calls. Streamed,
a call is announced once its name is written, then the raw text of its ``arguments``
object follows piece by piece.
"""

from __future__ import annotations

import json
import re
from typing import Any

from components.core.parsers._base import Call, PartialCall, StreamView, ToolCallFormat, content_end, partial_suffix

START, END = "<tool_call>", "</tool_call>"
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')


class Hermes(ToolCallFormat):
    name = "hermes"

    def extract(self, text: str, tools: list[dict[str, Any]] | None) -> tuple[str | None, list[Call]]:
        if START not in text:
            return text, []
        try:
            bodies = [json.loads(closed or open_) for closed, open_ in _CALL.findall(text)]
            calls = [Call(body["name"], json.dumps(body["arguments"], ensure_ascii=False)) for body in bodies]
        except (json.JSONDecodeError, KeyError, TypeError):
            return text, []
        return text[: text.find(START)] or None, calls

    def view(self, text: str, final: bool, tools: list[dict[str, Any]] | None) -> StreamView:
        view = StreamView(content_end(text, final, START))
        for body in _call_bodies(text):
            name = _NAME.search(body)
            if name is None:
                break  # later calls cannot be announced before this one
            view.calls.append(PartialCall(name.group(1), _arguments_text(body) or ""))
        return view


def _call_bodies(text: str) -> list[str]:
    bodies = []
    pos = 0
    while (start := text.find(START, pos)) >= 0:
        body_start = start + len(START)
        end = text.find(END, body_start)
        if end < 0:
            body = text[body_start:]
            bodies.append(body[: len(body) - partial_suffix(body, END)].strip())
            break
        bodies.append(text[body_start:end].strip())
        pos = end + len(END)
    return bodies


def _arguments_text(body: str) -> str | None:
    """The ``arguments`` value as written so far, cut at its closing bracket."""
    match = _ARGUMENTS.search(body)
    if match is None:
        return None
    raw = body[match.end() :]
    if not raw or raw[0] not in "{[":
        return None
    close = "}" if raw[0] == "{" else "]"
    depth, in_string, escaped = 0, False, False
    for i, char in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == raw[0]:
            depth += 1
        elif char == close:
            depth -= 1
            if depth == 0:
                return raw[: i + 1]
    return raw
