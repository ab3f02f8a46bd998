"""OpenAI chat completions: the engine's own dialect, so translation is mostly hiding.

The proxy asks the engine for token ids and logprobs the harness did not request; they
are removed again so the harness sees exactly the API it asked for.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.proxy.errors import ProxyError, bad_request, openai_error_body
from components.proxy.sse import DONE, sse_event
from components.proxy.surfaces._checks import json_type as _json_type


class _ClientWants:
    """Which engine extras the client itself asked for (and so must get back)."""

    __slots__ = ("logprobs", "token_ids", "usage")

    def __init__(self, request: dict[str, Any]) -> None:
        options = request.get("stream_options")
        self.logprobs = request.get("logprobs") is True
        self.token_ids = request.get("return_token_ids") is True
        self.usage = isinstance(options, dict) and options.get("include_usage") is True

    def strip(self, body: dict[str, Any]) -> None:
        """Remove the extras the client did not ask for, in a response or a stream chunk."""
        if not self.token_ids:
            body.pop("prompt_token_ids", None)
        if self.token_ids and self.logprobs:
            return
        for choice in body.get("choices") or ():
            if not self.token_ids:
                choice.pop("token_ids", None)
            if not self.logprobs and "logprobs" in choice:
                choice["logprobs"] = None


# Fields OpenAI's schema types as an object, array or string that vLLM sends as null when
# unset: a null there holds nothing, and a client generated from the schema may refuse it.
_NULL_FREE_TOP = ("system_fingerprint",)
_NULL_FREE_USAGE = ("prompt_tokens_details", "completion_tokens_details")
_NULL_FREE_MESSAGE = ("annotations", "function_call")


def _conform(body: dict[str, Any], message_key: str) -> None:
    """Make an engine answer or chunk what OpenAI's schema allows, losing nothing it says."""
    for key in _NULL_FREE_TOP:
        if key in body and body[key] is None:
            del body[key]
    usage = body.get("usage")
    if isinstance(usage, dict):
        for key in _NULL_FREE_USAGE:
            if key in usage and usage[key] is None:
                del usage[key]
    for choice in body.get("choices") or ():
        message = choice.get(message_key)
        if isinstance(message, dict):
            for key in _NULL_FREE_MESSAGE:
                if key in message and message[key] is None:
                    del message[key]
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and "refusal" not in logprobs:
            logprobs["refusal"] = None  # required (nullable); vLLM reports content tokens only


class ChatSurface:
    api = "chat.completions"
    path = "/v1/chat/completions"

    def parse(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request(f"request body must be a JSON object, got {_json_type(body)}")
        messages = body.get("messages")
        if messages is None:
            raise bad_request("'messages' is required: a list of message objects", param="messages")
        if not isinstance(messages, list):
            raise bad_request(f"'messages' must be a list of message objects, got {_json_type(messages)}", param="messages")
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                raise bad_request(
                    f"'messages[{position}]' must be an object with 'role' and 'content', got {_json_type(message)}",
                    param="messages",
                )
        if "stream" in body and body["stream"] is not None and not isinstance(body["stream"], bool):
            raise bad_request(f"'stream' must be true or false, got {_json_type(body['stream'])}", param="stream")
        n = body.get("n")
        if n is not None and (n != 1 or isinstance(n, bool)):
            raise bad_request(
                f"'n' must be 1, got {n!r}: each recorded call holds one sampled completion; "
                "make separate calls instead",
                param="n",
            )
        return body

    def is_stream(self, request: dict[str, Any]) -> bool:
        return request.get("stream") is True

    def to_upstream(self, request: dict[str, Any]) -> tuple[dict[str, Any], None]:
        return request, None

    def to_client(self, completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        _ClientWants(request).strip(completion)
        _conform(completion, "message")
        return completion

    def stream(self, request: dict[str, Any]) -> "_ChatStream":
        return _ChatStream(_ClientWants(request))

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return openai_error_body(err)


class _ChatStream:
    def __init__(self, wants: _ClientWants) -> None:
        self._wants = wants

    def events(self, chunks: list[dict[str, Any]]) -> bytes:
        # One frame for the read, not one per chunk: this runs for every token streamed.
        payloads = [payload for payload in map(self._payload, chunks) if payload is not None]
        return b"data: " + b"\n\ndata: ".join(payloads) + b"\n\n" if payloads else b""

    def _payload(self, chunk: dict[str, Any]) -> bytes | None:
        if not self._wants.usage and chunk.get("usage") is not None:
            del chunk["usage"]
            if not chunk.get("choices"):
                return None  # the usage-only chunk the proxy asked for on its own account
        self._wants.strip(chunk)
        _conform(chunk, "delta")
        return orjson.dumps(chunk)

    def error(self, err: ProxyError) -> bytes:
        return sse_event(orjson.dumps(openai_error_body(err)))

    def end(self) -> bytes:
        return sse_event(DONE)

