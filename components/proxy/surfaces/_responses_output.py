"""Engine chat completion -> OpenAI Response: the items and the body the plain answer and the stream share.

Ids derive from the engine's completion and tool-call ids, so a stream and the record
reassembled from the same chunks hold the same response.
"""

from __future__ import annotations

import time
from typing import Any

from components.core.parsers import REASONING_FIELD
from components.proxy.errors import ProxyError
from components.proxy.surfaces._checks import short_id
from components.proxy.surfaces._computer import COMPUTER, action_of, computer_call_item, declares_computer
from components.proxy.surfaces._responses_request import tool_names


class ResponseIds:
    """Ids of one response and its items, from the engine's completion id."""

    def __init__(self, engine_id: Any) -> None:
        self.base = short_id(engine_id)
        self.response = f"resp_{self.base}"
        self.message = f"msg_{self.base}"
        self.reasoning = f"rs_{self.base}"

    def function_call(self, position: int) -> str:
        return f"fc_{self.base}_{position}"

    def computer_call(self, position: int) -> str:
        return f"cu_{self.base}_{position}"

    def call_id(self, tool_call: dict[str, Any], position: int) -> str:
        # The engine's id is kept as is: the harness echoes it in function_call_output.call_id.
        given = tool_call.get("id")
        return given if isinstance(given, str) and given else f"call_{self.base}_{position}"


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def reasoning_item(ids: ResponseIds, text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "reasoning_text", "text": text}]
    return {"id": ids.reasoning, "type": "reasoning", "summary": [], "content": content, "status": status}


def message_item(ids: ResponseIds, text: str | None, status: str = "completed") -> dict[str, Any]:
    content = [] if text is None else [text_part(text)]
    return {"id": ids.message, "type": "message", "role": "assistant", "status": status, "content": content}


def function_call_item(
    ids: ResponseIds, position: int, call_id: str, chat_name: str, arguments: str, names: dict[str, tuple[str | None, str]],
    status: str = "completed",
) -> dict[str, Any]:  # fmt: skip
    namespace, name = names.get(chat_name, (None, chat_name))
    item = {
        "id": ids.function_call(position),
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def tool_call_item(
    ids: ResponseIds, position: int, call_id: str, chat_name: str, arguments: str, request: dict[str, Any],
    names: dict[str, tuple[str | None, str]],
) -> dict[str, Any]:  # fmt: skip
    """The output item of one engine tool call: a computer_call when it calls the computer tool.

    Arguments that are no action object stay a function_call named ``computer``: the
    harness sees what the model produced instead of an action the proxy made up.
    """
    if chat_name == COMPUTER and declares_computer(request.get("tools")):
        action = action_of(arguments)
        if action is not None:
            return computer_call_item(ids.computer_call(position), call_id, action)
    return function_call_item(ids, position, call_id, chat_name, arguments, names)


def usage(chat_usage: Any, prompt_tokens: int | None = None) -> dict[str, Any]:
    chat_usage = chat_usage if isinstance(chat_usage, dict) else {}
    inputs = chat_usage.get("prompt_tokens", prompt_tokens) or 0
    outputs = chat_usage.get("completion_tokens") or 0
    return {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inputs + outputs,
    }


def status_of(finish_reason: Any) -> tuple[str, dict[str, str] | None]:
    """(status, incomplete_details): a completion cut by the token limit is ``incomplete``."""
    if finish_reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    return "completed", None


def response_body(
    request: dict[str, Any], ids: ResponseIds, created: Any, engine_model: Any, *, status: str,
    output: list[dict[str, Any]], usage: dict[str, Any] | None = None, incomplete: dict[str, str] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    body = {
        "id": ids.response,
        "object": "response",
        "created_at": created if isinstance(created, (int, float)) else int(time.time()),
        "completed_at": int(time.time()) if status == "completed" else None,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "metadata": request.get("metadata") or {},
        "model": request.get("model") or engine_model,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",  # the proxy serves one tier, whatever the request asked
        "store": request.get("store", False),
        "temperature": request.get("temperature"),
        "text": {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p"),
        "truncation": "disabled",
    }
    if usage is not None:  # not known before the end; the schema allows no null in its place
        body["usage"] = usage
    return body


def response_from_chat(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The Response for an engine chat completion (the non-streamed answer)."""
    ids = ResponseIds(chat.get("id"))
    choices = chat.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if message.get(REASONING_FIELD):
        output.append(reasoning_item(ids, message[REASONING_FIELD]))
    if message.get("content"):
        output.append(message_item(ids, message["content"]))
    names = tool_names(request.get("tools"))
    for position, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        name, arguments = function.get("name") or "", function.get("arguments") or ""
        output.append(tool_call_item(ids, position, ids.call_id(call, position), name, arguments, request, names))
    status, incomplete = status_of(choice.get("finish_reason"))
    return response_body(
        request, ids, chat.get("created"), chat.get("model"),
        status=status, output=output, usage=usage(chat.get("usage")), incomplete=incomplete,
    )  # fmt: skip


def error_code(err: ProxyError) -> str:
    """The Responses error code for a proxy error (Codex retries ``rate_limit_exceeded`` and ``server_error``)."""
    if err.status == 429:
        return "rate_limit_exceeded"
    return "server_error" if err.status >= 500 else "invalid_request"
