"""Engine chat completion -> Anthropic Message: the pieces the plain answer and the stream share.

Ids are derived from the engine's (completion id, tool-call ids), never drawn at random,
so a streamed answer and the record reassembled from the same chunks agree.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.core.parsers import REASONING_FIELD
from components.proxy.errors import ProxyError
from components.proxy.surfaces._checks import short_id

_STOP_REASONS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    # Anthropic's docs name a 413 `request_too_large`, but neither its published spec nor its
    # SDKs' error types know that type; the status tells the SDKs what happened.
    413: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def message_id(engine_id: Any) -> str:
    return "msg_" + short_id(engine_id)


def tool_use_id(tool_call: dict[str, Any], engine_id: Any, position: int) -> str:
    # The engine's id is kept as is: the harness echoes it in tool_result.tool_use_id.
    given = tool_call.get("id")
    return given if isinstance(given, str) and given else f"toolu_{short_id(engine_id)}_{position}"


def stop_reason(finish_reason: Any, engine_stop: Any, request: dict[str, Any]) -> tuple[str | None, str | None]:
    """(stop_reason, stop_sequence): vLLM names the stop string that ended the text in ``stop_reason``."""
    if finish_reason is None:
        return None, None
    sequences = request.get("stop_sequences") or ()
    if finish_reason == "stop" and isinstance(engine_stop, str) and engine_stop in sequences:
        return "stop_sequence", engine_stop
    return _STOP_REASONS.get(finish_reason, "end_turn"), None


def usage(chat_usage: Any, *, prompt_tokens: int | None = None) -> dict[str, Any]:
    """A Message's usage; what the proxy has no counterpart for (server tools, regions, tiers) is null."""
    chat_usage = chat_usage if isinstance(chat_usage, dict) else {}
    inputs = chat_usage.get("prompt_tokens", prompt_tokens)
    return {
        "input_tokens": inputs if isinstance(inputs, int) else 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": None,
        "output_tokens": chat_usage.get("completion_tokens") or 0,
        "server_tool_use": None,
        "service_tier": None,
        "inference_geo": None,
    }


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "citations": None}


def tool_use_block(block_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # `caller` is "direct": the model called the tool itself (not from server-side code execution).
    return {"type": "tool_use", "id": block_id, "name": name, "input": arguments, "caller": {"type": "direct"}}


def tool_input(arguments: Any) -> dict[str, Any]:
    """The tool_use ``input`` object of the engine's JSON-string arguments ({} if not an object)."""
    try:
        value = orjson.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def thinking_block(text: str) -> dict[str, Any]:
    # No signature: the engine signs nothing, and the proxy drops thinking blocks sent back.
    return {"type": "thinking", "thinking": text, "signature": ""}


def message_shell(engine_id: Any, request: dict[str, Any], engine_model: Any) -> dict[str, Any]:
    """A Message without content, stop reason or usage (what message_start carries)."""
    return {
        "id": message_id(engine_id),
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or engine_model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "stop_details": None,
        "container": None,
    }


def message_body(chat: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic Message for an engine chat completion (the non-streamed answer)."""
    body = message_shell(chat.get("id"), request, chat.get("model"))
    choices = chat.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    if message.get(REASONING_FIELD):
        body["content"].append(thinking_block(message[REASONING_FIELD]))
    if message.get("content"):
        body["content"].append(text_block(message["content"]))
    for position, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        block_id = tool_use_id(call, chat.get("id"), position)
        body["content"].append(tool_use_block(block_id, function.get("name") or "", tool_input(function.get("arguments"))))
    body["stop_reason"], body["stop_sequence"] = stop_reason(choice.get("finish_reason"), choice.get("stop_reason"), request)
    body["usage"] = usage(chat.get("usage"))
    return body


def error_body(err: ProxyError) -> dict[str, Any]:
    """Anthropic's error shape, which its SDKs parse into their exception types."""
    kind = _ERROR_TYPES.get(err.status, "api_error" if err.status >= 500 else "invalid_request_error")
    # request_id is required (nullable): the proxy's answers come from no Anthropic request.
    return {"type": "error", "error": {"type": kind, "message": err.message}, "request_id": None}
