"""OpenAI Responses (``POST /v1/responses``): what Codex CLI speaks.

Requests become engine chat requests (``_responses_request``); the engine's completion
becomes a Response (``_responses_output``) or, streamed, the Responses event sequence
(``_responses_stream``). Errors take OpenAI's shape, which the Responses API shares.
"""

from __future__ import annotations

from typing import Any

from components.proxy.errors import ProxyError, bad_request, openai_error_body
from components.proxy.surfaces._checks import body_object, json_type, optional_bool, positive_int
from components.proxy.surfaces._responses_output import response_from_chat
from components.proxy.surfaces._responses_request import to_chat
from components.proxy.surfaces._responses_stream import ResponsesStream
from components.proxy.surfaces.base import TranslationNotes


class ResponsesSurface:
    api = "responses"
    path = "/v1/responses"

    def parse(self, body: Any) -> dict[str, Any]:
        body = body_object(body)
        items = body.get("input")
        if items is None:
            raise bad_request("'input' is required: a string or a list of input items", param="input")
        if not isinstance(items, (str, list)):
            raise bad_request(f"'input' must be a string or a list of input items, got {json_type(items)}", param="input")
        positive_int(body, "max_output_tokens", required=False, hint="the most tokens to generate")
        optional_bool(body, "stream")
        return body

    def is_stream(self, request: dict[str, Any]) -> bool:
        return request.get("stream") is True

    def to_upstream(self, request: dict[str, Any]) -> tuple[dict[str, Any], TranslationNotes]:
        return to_chat(request)

    def to_client(self, completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        return response_from_chat(completion, request)

    def stream(self, request: dict[str, Any]) -> ResponsesStream:
        return ResponsesStream(request)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return openai_error_body(err)
