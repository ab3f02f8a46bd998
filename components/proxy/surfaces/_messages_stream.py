"""Engine chat chunks -> Anthropic Messages server-sent events.

Sequence: ``message_start`` (a Message with empty content and the prompt's token count),
``ping``, then per content block ``content_block_start``, its deltas (``text_delta`` or
``input_json_delta``) and ``content_block_stop``; finally ``message_delta`` (stop reason,
usage) and ``message_stop``, sent only once the call is recorded. Every event is named
(``event:``): Anthropic's SDKs skip unnamed ones.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.core.parsers import REASONING_FIELD
from components.proxy.errors import ProxyError
from components.proxy.sse import sse_event
from components.proxy.surfaces.base import ChunkByChunk
from components.proxy.surfaces._messages_response import (
    error_body,
    message_shell,
    stop_reason,
    text_block,
    thinking_block,
    tool_use_block,
    tool_use_id,
    usage,
)


def _event(kind: str, body: dict[str, Any]) -> bytes:
    return sse_event(orjson.dumps({"type": kind, **body}), kind)


class MessagesStream(ChunkByChunk):
    def __init__(self, request: dict[str, Any]) -> None:
        self._request = request
        self._engine_id: Any = None
        self._started = False
        self._failed = False
        self._open: tuple[str, int] | None = None  # ("thinking" or "text", -1) or ("tool", engine tool index)
        self._blocks = 0  # content blocks started so far
        self._tool_blocks: dict[int, int] = {}  # engine tool-call index -> content block index
        self._finish: Any = None
        self._engine_stop: Any = None
        self._usage: Any = None
        self._prompt_tokens: int | None = None

    def event(self, chunk: dict[str, Any]) -> bytes:
        if "error" in chunk or chunk.get("object") == "error":
            inner = chunk.get("error") if isinstance(chunk.get("error"), dict) else chunk
            return self.error(ProxyError(502, f"upstream reported an error mid-stream: {inner.get('message', inner)}"))
        out: list[bytes] = []
        if not self._started:
            self._engine_id = chunk.get("id")
            ids = chunk.get("prompt_token_ids")
            self._prompt_tokens = len(ids) if isinstance(ids, list) else None
            out.append(self._start(chunk.get("model")))
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) == 0:
                self._choice(choice, out)
        return b"".join(out)

    def _start(self, engine_model: Any) -> bytes:
        self._started = True
        message = message_shell(self._engine_id, self._request, engine_model)
        message["usage"] = usage(None, prompt_tokens=self._prompt_tokens)
        return _event("message_start", {"message": message}) + _event("ping", {})

    def _choice(self, choice: dict[str, Any], out: list[bytes]) -> None:
        delta = choice.get("delta") or {}
        thinking = delta.get(REASONING_FIELD)
        if isinstance(thinking, str) and thinking:
            if self._open != ("thinking", -1):
                out.append(self._begin(("thinking", -1), thinking_block("")))
            out.append(self._delta({"type": "thinking_delta", "thinking": thinking}))
        text = delta.get("content")
        if isinstance(text, str) and text:
            if self._open != ("text", -1):
                out.append(self._begin(("text", -1), text_block("")))
            out.append(self._delta({"type": "text_delta", "text": text}))
        for call in delta.get("tool_calls") or ():
            self._tool_delta(call, out)
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
            self._engine_stop = choice.get("stop_reason")

    def _tool_delta(self, call: dict[str, Any], out: list[bytes]) -> None:
        index = call.get("index", 0)
        function = call.get("function") or {}
        if index not in self._tool_blocks:
            self._tool_blocks[index] = self._blocks
            block = tool_use_block(tool_use_id(call, self._engine_id, index), function.get("name") or "", {})
            out.append(self._begin(("tool", index), block))
        arguments = function.get("arguments")
        if arguments:
            out.append(self._delta({"type": "input_json_delta", "partial_json": arguments}, self._tool_blocks[index]))

    def _begin(self, key: tuple[str, int], block: dict[str, Any]) -> bytes:
        closing = self._close()
        self._open = key
        self._blocks += 1
        return closing + _event("content_block_start", {"index": self._blocks - 1, "content_block": block})

    def _delta(self, delta: dict[str, Any], index: int | None = None) -> bytes:
        return _event("content_block_delta", {"index": self._blocks - 1 if index is None else index, "delta": delta})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _event("content_block_stop", {"index": self._blocks - 1})

    def error(self, err: ProxyError) -> bytes:
        self._failed = True
        return sse_event(orjson.dumps(error_body(err)), "error")

    def end(self) -> bytes:
        if self._failed:
            return b""
        head = b"" if self._started else self._start(None)
        reason, sequence = stop_reason(self._finish, self._engine_stop, self._request)
        final = usage(self._usage, prompt_tokens=self._prompt_tokens)
        cumulative = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use")
        delta_usage = {key: final[key] for key in cumulative}
        delta = {"stop_reason": reason, "stop_sequence": sequence, "container": None}
        return (
            head
            + self._close()
            + _event("message_delta", {"delta": {**delta, "stop_details": None}, "usage": delta_usage})
            + _event("message_stop", {})
        )
