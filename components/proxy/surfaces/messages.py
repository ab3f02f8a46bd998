"""Anthropic Messages (``POST /v1/messages``, any query string): what Claude Code speaks.

Requests become engine chat requests (``_messages_request``); the engine's completion
becomes a Message (``_messages_response``) or, streamed, Anthropic's event sequence
(``_messages_stream``); errors take Anthropic's shape ``{"type": "error", "error": {...}}``.
"""

from __future__ import annotations

from typing import Any

from components.proxy.errors import ProxyError, bad_request
from components.proxy.surfaces._checks import body_object, list_at, object_at, optional_bool, positive_int
from components.proxy.surfaces._messages_request import to_chat
from components.proxy.surfaces._messages_response import error_body, message_body
from components.proxy.surfaces._messages_stream import MessagesStream
from components.proxy.surfaces.base import TranslationNotes


class MessagesSurface:
    api = "anthropic.messages"
    path = "/v1/messages"

    def parse(self, body: Any) -> dict[str, Any]:
        body = body_object(body)
        if "messages" not in body:
            raise bad_request("'messages' is required: a list of {role, content} objects", param="messages")
        for index, message in enumerate(list_at(body["messages"], "messages")):
            object_at(message, f"messages[{index}]")
        positive_int(body, "max_tokens", required=True, hint="the most tokens to generate, e.g. 1024")
        optional_bool(body, "stream")
        return body

    def is_stream(self, request: dict[str, Any]) -> bool:
        return request.get("stream") is True

    def to_upstream(self, request: dict[str, Any]) -> tuple[dict[str, Any], TranslationNotes]:
        return to_chat(request)

    def to_client(self, completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        return message_body(completion, request)

    def stream(self, request: dict[str, Any]) -> MessagesStream:
        return MessagesStream(request)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return error_body(err)
