"""A rollout's recorded calls as the sequence of tool calls the policy made, each with the
result the harness sent back: the one form every analytic reads (docs/analytics.md).

Read from the recordings alone, for every recorded API:

- the tool calls come from each call's answer (``components.core.tool_calls``), named as
  the engine saw them (a Responses namespace function as ``<namespace>__<name>``);
- the declared tools are the functions of each call's chat request, the translation's for
  the other APIs: what the policy could call (tools the proxy dropped are not callable);
- a tool call's result is the ``tool`` message answering its id in any later chat request
  (the translation of an Anthropic ``tool_result`` or a Responses ``function_call_output``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from components.core.tool_calls import answer_tool_calls
from components.core.trajectory import RecordedCall, chat_request
from components.proxy.surfaces._messages_request import ERROR_PREFIX
from components.proxy.surfaces._responses_request import flat_name

# Where a harness says a command failed, in the head of its tool result: Claude Code's
# is_error (the proxy's ERROR_PREFIX), the reference harness's `error: ...`, `[timed out`.
_ERROR_HEAD = re.compile(rf"^\s*(?:{re.escape(ERROR_PREFIX.strip())}|error\b|\[?timed out\b)", re.IGNORECASE)
# Exit-status reports: `[exit code 1]` (reference), `Exit code: 1` / `Process exited with
# code 1` (Codex), `"exit_code": 1` (Codex's JSON), `<returncode>1</returncode>` (mini-swe-agent).
_EXIT_STATUS = (
    re.compile(r"\bexit(?:ed with)? code:?\s*(-?\d+)", re.IGNORECASE),
    re.compile(r"\"exit_code\"\s*:\s*(-?\d+)"),
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
)
_HEAD_CHARS = 300  # status lines come first; a command's own output can say anything


@dataclass(frozen=True)
class Action:
    """One tool call the policy made, in rollout order, and what came back."""

    position: int  # 0-based, over the rollout's tool calls
    call_index: int  # the recorded model call whose answer made it
    tool: str
    arguments: Mapping[str, Any]
    result: str | None  # None: never sent back (the rollout ended first)

    @property
    def failed(self) -> bool:
        """The result reports an error (see ``result_is_error``)."""
        return self.result is not None and result_is_error(self.result)


def result_is_error(text: str) -> bool:
    """Whether a tool result reports a failure: an error head, or a non-zero exit status near its start."""
    head = text[:_HEAD_CHARS]
    if _ERROR_HEAD.match(head):
        return True
    for pattern in _EXIT_STATUS:
        match = pattern.search(head)
        if match:
            return int(match.group(1)) != 0
    return False


def rollout_actions(calls: Sequence[RecordedCall]) -> list[Action]:
    """Every tool call of the calls' answers, in call order, with its result."""
    ordered = sorted(calls, key=lambda c: c.call_index)
    results: dict[str, str] = {}
    for call in ordered:
        for message in chat_request(call).get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "tool" and isinstance(message.get("tool_call_id"), str):
                results.setdefault(message["tool_call_id"], _text(message.get("content")))
    actions: list[Action] = []
    for call in ordered:
        for tool_call in answer_tool_calls(call.response):
            name = flat_name(tool_call.namespace, tool_call.name)
            result = results.get(tool_call.id) if tool_call.id else None
            actions.append(Action(len(actions), call.call_index, name, tool_call.arguments, result))
    return actions


def declared_tools(calls: Sequence[RecordedCall]) -> set[str]:
    """The function names any of the calls' chat requests declared."""
    names = set()
    for call in calls:
        for tool in chat_request(call).get("tools") or []:
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
    return names


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""
