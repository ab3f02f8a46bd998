"""What every format module provides, and the streaming that all tool-call formats share.

A tool-call format reads a finished text (``extract``) and, while a text is still being
generated, says how much of it is surely content and which calls are known so far
(``view``). ``StreamingToolCalls`` turns successive views into chat deltas, so each format
only has to say what it sees, never how to stream it.
"""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass, field
from typing import Any

_ID_ALPHABET = string.ascii_letters + string.digits


def tool_call_id() -> str:
    """vLLM's id for a parsed tool call (``chatcmpl-tool-`` + 32 hex digits)."""
    return f"chatcmpl-tool-{secrets.token_hex(16)}"


def short_tool_call_id() -> str:
    """Mistral's 9 letters and digits (its chat template refuses longer ids)."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(9))


@dataclass
class Call:
    """One tool call: its name and its arguments as a JSON object's text."""

    name: str
    arguments: str


@dataclass
class PartialCall:
    """A call being generated: ``arguments`` holds what is sure so far and only ever grows."""

    name: str
    arguments: str = ""


@dataclass
class StreamView:
    """What a text generated so far says: ``text[:content_end]`` is content, then these calls."""

    content_end: int
    calls: list[PartialCall] = field(default_factory=list)


class ToolCallFormat:
    """A tool-call format, as vLLM's parser of the same ``name`` reads it."""

    name: str = ""

    def new_id(self) -> str:
        return tool_call_id()

    def extract(self, text: str, tools: list[dict[str, Any]] | None) -> tuple[str | None, list[Call]]:
        """``(content, calls)`` of a finished text."""
        raise NotImplementedError

    def view(self, text: str, final: bool, tools: list[dict[str, Any]] | None) -> StreamView:
        """What is sure of ``text`` so far; ``final``: the text is complete."""
        raise NotImplementedError


def as_tool_calls(fmt: ToolCallFormat, calls: list[Call]) -> list[dict[str, Any]]:
    """Calls in a chat message's ``tool_calls`` shape."""
    return [
        {"id": fmt.new_id(), "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in calls
    ]


class StreamingToolCalls:
    """Feed the content text generated so far; get back what is new to send."""

    def __init__(self, fmt: ToolCallFormat, tools: list[dict[str, Any]] | None) -> None:
        self._format = fmt
        self._tools = tools
        self._content_sent = 0
        self._arguments_sent: list[str] = []

    @property
    def called_tools(self) -> bool:
        return bool(self._arguments_sent)

    def feed(self, text: str, final: bool = False) -> tuple[str | None, list[dict[str, Any]]]:
        """``(content delta or None, tool call deltas)`` for the text so far."""
        view = self._format.view(text, final, self._tools)
        content = None
        if view.content_end > self._content_sent and not self.called_tools:
            content = text[self._content_sent : view.content_end]
            self._content_sent = view.content_end
        deltas: list[dict[str, Any]] = []
        for index, call in enumerate(view.calls):
            if index == len(self._arguments_sent):
                self._arguments_sent.append("")
                deltas.append(
                    {"id": self._format.new_id(), "type": "function", "index": index, "function": {"name": call.name}}
                )
            sent = self._arguments_sent[index]
            if len(call.arguments) > len(sent) and call.arguments.startswith(sent):
                deltas.append({"index": index, "function": {"arguments": call.arguments[len(sent) :]}})
                self._arguments_sent[index] = call.arguments
        return content, deltas


def partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


def content_end(text: str, final: bool, *tags: str) -> int:
    """Where content stops: at the first of ``tags``, else before a tail that may start one."""
    found = [at for at in (text.find(tag) for tag in tags) if at >= 0]
    if found:
        return min(found)
    if final:
        return len(text)
    return len(text) - max(partial_suffix(text, tag) for tag in tags)
