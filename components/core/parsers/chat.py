"""A generated text as a chat answer: reasoning first, then content and tool calls.

As vLLM's chat endpoint does it: the reasoning parser (when one is configured) splits
the reasoning off first, and only the rest is read for tool calls, so a call written
inside the reasoning is never a call. Used by the dev engine's chat endpoint and by the
recording proxy's token path, configured with the same names, so both give the same
answer for the same text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.core.parsers._base import StreamingToolCalls, as_tool_calls
from components.core.parsers.registry import reasoning_format, tool_call_format

# The chat message's (and delta's) reasoning field, as vLLM serves it.
REASONING_FIELD = "reasoning"


def parses_tools(tools: Any, tool_choice: Any) -> bool:
    """Whether a chat request gets its tool calls parsed: vLLM's default once tools are given."""
    return bool(tools) and tool_choice != "none"


@dataclass
class ChatAnswer:
    content: str | None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass(frozen=True)
class ChatParsers:
    """The configured formats (vLLM's names; None: no parsing of that kind)."""

    tool_call_parser: str | None = "hermes"
    reasoning_parser: str | None = None

    def answer(self, text: str, finish_reason: str | None, request: dict[str, Any]) -> ChatAnswer:
        """The answer for a finished generation of the chat ``request`` (its ``tools``, ``tool_choice``)."""
        reasoning, content = None, text
        if self.reasoning_parser is not None:
            reasoning, content = reasoning_format(self.reasoning_parser).extract(text)
        tools = _tools_parsed(self.tool_call_parser, request)
        if tools is None or content is None:
            return ChatAnswer(content, reasoning, [], finish_reason)
        fmt = tool_call_format(self.tool_call_parser)  # type: ignore[arg-type]
        content, calls = fmt.extract(content, tools)
        if calls and content is not None and not content.strip():
            content = None  # vLLM's chat endpoint drops blank text beside calls
        finish = "tool_calls" if calls and finish_reason == "stop" else finish_reason
        return ChatAnswer(content, reasoning, as_tool_calls(fmt, calls), finish)

    def deltas(self, request: dict[str, Any]) -> ChatDeltas:
        return ChatDeltas(self, request)


class ChatDeltas:
    """Generated text, piece by piece, as the ``delta`` objects of chat completion chunks."""

    def __init__(self, parsers: ChatParsers, request: dict[str, Any]) -> None:
        tools = _tools_parsed(parsers.tool_call_parser, request)
        self._reasoning = reasoning_format(parsers.reasoning_parser) if parsers.reasoning_parser else None
        self._tools = (
            StreamingToolCalls(tool_call_format(parsers.tool_call_parser), tools)  # type: ignore[arg-type]
            if tools is not None
            else None
        )
        self._text = ""
        self._reasoning_sent = 0
        self._content_sent = 0

    def feed(self, piece: str, finished: bool) -> dict[str, Any] | None:
        """The delta for the next piece; None when nothing is ready to send (a tag being held back)."""
        self._text += piece
        delta: dict[str, Any] = {}
        content_text: str | None = self._text
        if self._reasoning is not None:
            view = self._reasoning.view(self._text, finished)
            start = max(self._reasoning_sent, view.reasoning_start)
            if view.reasoning_end > start:
                delta[REASONING_FIELD] = self._text[start : view.reasoning_end]
                self._reasoning_sent = view.reasoning_end
            content_text = None if view.content_start is None else self._text[view.content_start :]
        if content_text is not None:
            if self._tools is None:
                if len(content_text) > self._content_sent:
                    delta["content"] = content_text[self._content_sent :]
                    self._content_sent = len(content_text)
            else:
                content, tool_deltas = self._tools.feed(content_text, final=finished)
                if content:
                    delta["content"] = content
                if tool_deltas:
                    delta["tool_calls"] = tool_deltas
        return delta or None

    def finish_reason(self, reason: str | None) -> str | None:
        """The chat finish reason: a generation that ended normally after a tool call reports ``tool_calls``."""
        called = self._tools is not None and self._tools.called_tools
        return "tool_calls" if called and reason == "stop" else reason


def _tools_parsed(tool_call_parser: str | None, request: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The request's tools when its answer is read for tool calls, else None."""
    tools = request.get("tools")
    if tool_call_parser is None or not parses_tools(tools, request.get("tool_choice")):
        return None
    return list(tools)
