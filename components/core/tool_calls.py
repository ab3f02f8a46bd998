"""The tool calls in a recorded answer, read the same way for every recorded API.

A recorded call keeps the response as the harness received it: Anthropic ``tool_use``
blocks, Responses ``function_call`` / ``computer_call`` items, or chat ``tool_calls``.
The trainer (subagent launches) and the behaviour analytics (docs/analytics.md) both
need the calls themselves, so the three shapes are read here once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

# The name a computer-use call has in the engine's chat form (components/proxy/surfaces/_computer.py).
COMPUTER_TOOL = "computer"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an answer: its id (what the tool result names), tool and arguments."""

    id: str | None
    name: str
    arguments: Mapping[str, Any]
    namespace: str | None = None  # Responses: the namespace tool the function belongs to


def arguments_of(raw: Any) -> Mapping[str, Any]:
    """Arguments as an object: parsed from JSON text when given as text, else empty."""
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, Mapping) else {}
    return {}


def answer_tool_calls(response: Mapping[str, Any] | None) -> list[ToolCall]:
    """Every tool call in a recorded response, in order, for every recorded API."""
    if not isinstance(response, Mapping):
        return []
    found: list[ToolCall] = []
    for block in response.get("content") or []:  # anthropic.messages
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            found.append(ToolCall(_id(block.get("id")), str(block.get("name")), arguments_of(block.get("input"))))
    for item in response.get("output") or []:  # responses
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
            found.append(ToolCall(_id(item.get("call_id")), str(item.get("name")), arguments_of(item.get("arguments")), namespace))
        elif item.get("type") == "computer_call":
            found.append(ToolCall(_id(item.get("call_id")), COMPUTER_TOOL, arguments_of(item.get("action"))))
    for choice in response.get("choices") or []:  # chat.completions
        message = choice.get("message") if isinstance(choice, Mapping) else None
        for call in (message or {}).get("tool_calls") or []:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function") or {}
            found.append(ToolCall(_id(call.get("id")), str(function.get("name")), arguments_of(function.get("arguments"))))
    return found


def _id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
