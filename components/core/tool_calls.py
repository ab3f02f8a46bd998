"""Hermes-style tool calls (``<tool_call>{json}</tool_call>``) read from generated text.

Behaves like vLLM's ``hermes`` parser: text before the first ``<tool_call>`` is the
message content; a tool call whose JSON does not parse leaves the whole text as content
and no tool calls. Streaming sends the content first, then for each call one delta with
its id and name, then the raw text of its ``arguments`` object piece by piece.

Shared by the dev engine (its chat endpoint) and the recording proxy (which turns the
engine's text completions back into chat answers when it sends token-id prompts), so
both read a model's tool calls the same way.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

START, END = "<tool_call>", "</tool_call>"
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')


def tool_call_id() -> str:
    return f"chatcmpl-tool-{uuid.uuid4().hex}"


def extract_tool_calls(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Return (content, tool_calls) for a finished generation."""
    if START not in text:
        return text, []
    try:
        calls = [json.loads(closed or open_) for closed, open_ in _CALL.findall(text)]
        tool_calls = [
            {
                "id": tool_call_id(),
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)},
            }
            for call in calls
        ]
    except (json.JSONDecodeError, KeyError, TypeError):
        return text, []
    content = text[: text.find(START)]
    return content or None, tool_calls


class StreamingToolParser:
    """Feed the whole text generated so far; get back what is new to send."""

    def __init__(self) -> None:
        self._content_sent = 0
        self._names: list[str] = []
        self._arguments_sent: list[str] = []

    @property
    def called_tools(self) -> bool:
        return bool(self._names)

    def feed(self, text: str, final: bool = False) -> tuple[str | None, list[dict[str, Any]]]:
        """Return (content delta or None, tool call deltas) for the text so far.

        ``final``: the text is complete, so a held-back tail that looked like the start of
        ``<tool_call>`` is plain content after all.
        """
        content = self._content_delta(text, final)
        deltas: list[dict[str, Any]] = []
        for index, body in enumerate(_call_bodies(text)):
            if index == len(self._names):
                name = _NAME.search(body)
                if name is None:
                    break  # later calls cannot be announced before this one
                self._names.append(name.group(1))
                self._arguments_sent.append("")
                deltas.append(
                    {"id": tool_call_id(), "type": "function", "index": index, "function": {"name": name.group(1)}}
                )
            arguments = _arguments_text(body)
            if arguments is not None and len(arguments) > len(self._arguments_sent[index]):
                piece = arguments[len(self._arguments_sent[index]) :]
                self._arguments_sent[index] = arguments
                deltas.append({"index": index, "function": {"arguments": piece}})
        return content, deltas

    def _content_delta(self, text: str, final: bool) -> str | None:
        at = text.find(START)
        if at >= 0:
            sendable = at
        else:
            sendable = len(text) if final else len(text) - _partial_suffix(text, START)
        if sendable <= self._content_sent:
            return None
        piece = text[self._content_sent : sendable]
        self._content_sent = sendable
        return piece


def parses_tools(tools: Any, tool_choice: Any) -> bool:
    """Whether a chat request gets its tool calls parsed: vLLM's default once tools are given."""
    return bool(tools) and tool_choice != "none"


def chat_answer(
    text: str, finish_reason: str | None, parse: bool
) -> tuple[str | None, list[dict[str, Any]], str | None]:
    """``(content, tool_calls, finish_reason)`` of a finished generation, as a chat message has them."""
    if not parse:
        return text, [], finish_reason
    content, tool_calls = extract_tool_calls(text)
    return content, tool_calls, "tool_calls" if tool_calls and finish_reason == "stop" else finish_reason


class ChatDeltas:
    """Generated text, piece by piece, as the ``delta`` objects of chat completion chunks."""

    def __init__(self, parse: bool) -> None:
        self._parser = StreamingToolParser() if parse else None
        self._text = ""

    def feed(self, piece: str, finished: bool) -> dict[str, Any] | None:
        """The delta for the next piece; None when nothing is ready to send (a tag being held back)."""
        if self._parser is None:
            return {"content": piece}
        self._text += piece
        content, tool_deltas = self._parser.feed(self._text, final=finished)
        if not (content or tool_deltas):
            return None
        return {"content": content, "tool_calls": tool_deltas} if tool_deltas else {"content": content}

    def finish_reason(self, reason: str | None) -> str | None:
        """The chat finish reason: a generation that ended normally after a tool call reports ``tool_calls``."""
        called = self._parser is not None and self._parser.called_tools
        return "tool_calls" if called and reason == "stop" else reason


def _call_bodies(text: str) -> list[str]:
    bodies = []
    pos = 0
    while (start := text.find(START, pos)) >= 0:
        body_start = start + len(START)
        end = text.find(END, body_start)
        if end < 0:
            body = text[body_start:]
            overlap = _partial_suffix(body, END)
            bodies.append(body[: len(body) - overlap].strip())
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


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
