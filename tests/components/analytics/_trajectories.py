"""Hand-made recorded calls in each API the proxy records, for the analytics tests.

A rollout is written as a list of turns: each turn the tool calls the model made (as
``(tool, arguments)``) and the results the harness sent back for them; the builders put
both where the proxy's records hold them (the answer in the response, the results in the
next call's request, translated to chat form for the other APIs as the proxy does).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from components.core.trajectory import RecordedCall

Turn = tuple[list[tuple[str, dict[str, Any]]], list[str]]  # (tool calls, their results)


def _record(index: int, api: str, request: dict[str, Any], response: dict[str, Any], upstream: dict[str, Any] | None, **extra: Any) -> RecordedCall:
    return RecordedCall(
        session_id="r-s0", call_index=index, api=api, request=request, response=response,
        prompt_token_ids=[1] * (10 + index), completion_token_ids=[2] * 3, started_at=float(index), latency_ms=1.0,
        upstream_status=200, translation={"upstream_request": upstream} if upstream is not None else None, **extra,
    )  # fmt: skip


def chat_rollout(turns: Sequence[Turn], tools: Sequence[str] = ("shell",), final: str = "done") -> list[RecordedCall]:
    """A chat-completions rollout: one call per turn, then one answering ``final``."""
    declared = [{"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in tools]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "the task"}]
    calls = []
    for index, (tool_calls, results) in enumerate([*turns, ([], [])]):
        request = {"model": "p", "messages": list(messages), "tools": declared}
        chat_calls = [
            {"id": f"c{index}_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            for n, (name, arguments) in enumerate(tool_calls)
        ]
        message = {"role": "assistant", "content": None if chat_calls else final}
        if chat_calls:
            message["tool_calls"] = chat_calls
        calls.append(_record(index, "chat.completions", request, {"choices": [{"index": 0, "message": message}]}, None))
        messages.append(message)
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(chat_calls, results)]
    return calls


def anthropic_rollout(turns: Sequence[tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, bool]]]], tools: Sequence[str]) -> list[RecordedCall]:
    """An Anthropic messages rollout; results are ``(text, is_error)``, translated as the proxy does."""
    from components.proxy.surfaces._messages_request import to_chat

    declared = [{"name": t, "input_schema": {"type": "object"}} for t in tools]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "the task"}]
    calls = []
    for index, (tool_calls, results) in enumerate([*turns, ([], [])]):
        request = {"model": "p", "max_tokens": 64, "messages": list(messages), "tools": declared}
        blocks = [{"type": "tool_use", "id": f"toolu_{index}_{n}", "name": name, "input": args} for n, (name, args) in enumerate(tool_calls)]
        content = blocks or [{"type": "text", "text": "done"}]
        calls.append(_record(index, "anthropic.messages", request, {"type": "message", "role": "assistant", "content": content}, to_chat(request)[0]))
        messages.append({"role": "assistant", "content": content})
        if blocks:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "content": text, "is_error": error}
                for b, (text, error) in zip(blocks, results)
            ]})  # fmt: skip
    return calls


def responses_rollout(turns: Sequence[Turn], tools: Sequence[str]) -> list[RecordedCall]:
    """A Responses rollout (Codex's API), the whole input re-sent each call."""
    from components.proxy.surfaces._responses_request import to_chat

    declared = [{"type": "function", "name": t, "parameters": {"type": "object"}} for t in tools]
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "the task"}]
    calls = []
    for index, (tool_calls, results) in enumerate([*turns, ([], [])]):
        request = {"model": "p", "input": list(items), "tools": declared}
        output = [
            {"type": "function_call", "id": f"fc_{index}_{n}", "call_id": f"call_{index}_{n}", "name": name, "arguments": json.dumps(args)}
            for n, (name, args) in enumerate(tool_calls)
        ] or [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]
        calls.append(_record(index, "responses", request, {"object": "response", "output": output}, to_chat(request)[0]))
        items += output
        items += [{"type": "function_call_output", "call_id": o["call_id"], "output": r} for o, r in zip(output, results)]
    return calls


def outcome(rollout_id: str = "t-s0", *, passed: bool = True, status: str = "ok", harness: str = "reference") -> dict[str, Any]:
    task_id = rollout_id.rpartition("-s")[0]
    return {
        "rollout_id": rollout_id, "task_id": task_id, "sample_index": int(rollout_id.rpartition("-s")[2]), "iteration": 0,
        "status": status, "reward": float(passed) if status == "ok" else None, "passed": passed if status == "ok" else None,
        "extra": {"harness": harness},
    }  # fmt: skip
