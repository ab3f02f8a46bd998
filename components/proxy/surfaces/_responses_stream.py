"""Engine chat chunks -> OpenAI Responses server-sent events.

Sequence: ``response.created``, ``response.in_progress``; for text an output item
(``output_item.added``, ``content_part.added``, ``output_text.delta``..., ``output_text.done``,
``content_part.done``, ``output_item.done``); per tool call a ``function_call`` item
(``output_item.added``, ``function_call_arguments.delta``..., ``.done``, ``output_item.done``),
or for a call of the computer tool a ``computer_call`` item (``output_item.added`` and
``.done``, both sent once its arguments are complete: its action is one object);
then ``response.completed`` (or ``response.incomplete`` when the token limit cut the
answer) holding the whole response, sent only once the call is recorded. Every event has
its ``event:`` name and a ``sequence_number``.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.core.parsers import REASONING_FIELD
from components.proxy.errors import ProxyError
from components.proxy.sse import sse_event
from components.proxy.surfaces._computer import COMPUTER, declares_computer
from components.proxy.surfaces._responses_output import (
    ResponseIds,
    error_code,
    function_call_item,
    message_item,
    reasoning_item,
    response_body,
    status_of,
    text_part,
    tool_call_item,
    usage,
)
from components.proxy.surfaces._responses_request import tool_names
from components.proxy.surfaces.base import ChunkByChunk


class ResponsesStream(ChunkByChunk):
    def __init__(self, request: dict[str, Any]) -> None:
        self._request = request
        self._names = tool_names(request.get("tools"))
        self._computer = declares_computer(request.get("tools"))
        self._held = False  # the open item is a computer call, sent whole when it closes
        self._ids = ResponseIds(None)
        self._head: dict[str, Any] = {}
        self._sequence = 0
        self._started = False
        self._failed = False
        self._output: list[dict[str, Any]] = []  # finished items, in output order
        self._open: dict[str, Any] | None = None  # the item being streamed
        self._text: list[str] = []
        self._calls: dict[int, int] = {}  # engine tool-call index -> output index
        self._finish: Any = None
        self._usage: Any = None
        self._prompt_tokens: int | None = None

    def _event(self, kind: str, **body: Any) -> bytes:
        self._sequence += 1
        return sse_event(orjson.dumps({"type": kind, "sequence_number": self._sequence - 1, **body}), kind)

    def event(self, chunk: dict[str, Any]) -> bytes:
        if "error" in chunk or chunk.get("object") == "error":
            inner = chunk.get("error") if isinstance(chunk.get("error"), dict) else chunk
            return self.error(ProxyError(502, f"upstream reported an error mid-stream: {inner.get('message', inner)}"))
        out: list[bytes] = []
        if not self._started:
            ids = chunk.get("prompt_token_ids")
            self._prompt_tokens = len(ids) if isinstance(ids, list) else None
            out.append(self._start(chunk))
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) == 0:
                self._choice(choice, out)
        return b"".join(out)

    def _start(self, chunk: dict[str, Any]) -> bytes:
        self._started = True
        self._ids = ResponseIds(chunk.get("id"))
        self._head = {"created": chunk.get("created"), "model": chunk.get("model")}
        response = self._body("in_progress")
        return self._event("response.created", response=response) + self._event("response.in_progress", response=response)

    def _body(self, status: str, **fields: Any) -> dict[str, Any]:
        created, model = self._head.get("created"), self._head.get("model")
        return response_body(self._request, self._ids, created, model, status=status, output=list(self._output), **fields)

    def _choice(self, choice: dict[str, Any], out: list[bytes]) -> None:
        delta = choice.get("delta") or {}
        reasoning = delta.get(REASONING_FIELD)
        if isinstance(reasoning, str) and reasoning:
            out.append(self._reasoning_delta(reasoning))
        text = delta.get("content")
        if isinstance(text, str) and text:
            out.append(self._text_delta(text))
        for call in delta.get("tool_calls") or ():
            out.append(self._call_delta(call))
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]

    def _text_delta(self, text: str) -> bytes:
        head = b""
        if self._open is None or self._open["type"] != "message":
            head = self._close()
            self._open = message_item(self._ids, None, status="in_progress")
            self._text = []
            head += self._event("response.output_item.added", output_index=len(self._output), item=self._open)
            head += self._event("response.content_part.added", **self._where(), content_index=0, part=text_part(""))
        self._text.append(text)
        return head + self._event("response.output_text.delta", **self._where(), content_index=0, delta=text, logprobs=[])

    def _reasoning_delta(self, text: str) -> bytes:
        head = b""
        if self._open is None or self._open["type"] != "reasoning":
            head = self._close()
            self._open = reasoning_item(self._ids, "", status="in_progress")
            self._text = []
            head += self._event("response.output_item.added", output_index=len(self._output), item=self._open)
        self._text.append(text)
        return head + self._event("response.reasoning_text.delta", **self._where(), content_index=0, delta=text)

    def _call_delta(self, call: dict[str, Any]) -> bytes:
        index = call.get("index", 0)
        function = call.get("function") or {}
        head = b""
        if index not in self._calls:
            head = self._close()
            self._calls[index] = len(self._output)
            call_id = self._ids.call_id(call, index)
            name = function.get("name") or ""
            self._open = function_call_item(self._ids, index, call_id, name, "", self._names, status="in_progress")
            self._held = self._computer and name == COMPUTER
            if not self._held:
                head += self._event("response.output_item.added", output_index=len(self._output), item=self._open)
        arguments = function.get("arguments")
        if not arguments or self._open is None or self._calls[index] != len(self._output):
            return head  # argument pieces of an item already closed cannot be sent any more
        self._open["arguments"] += arguments
        if self._held:
            return head
        return head + self._event("response.function_call_arguments.delta", **self._where(), delta=arguments)

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._open["id"], "output_index": len(self._output)}

    def _close(self) -> bytes:
        item, self._open = self._open, None
        if item is None:
            return b""
        where = {"item_id": item["id"], "output_index": len(self._output)}
        if self._held:
            return self._close_held(item)
        if item["type"] == "reasoning":
            text = "".join(self._text)
            item = reasoning_item(self._ids, text)
            events = self._event("response.reasoning_text.done", **where, content_index=0, text=text)
        elif item["type"] == "message":
            text = "".join(self._text)
            part = text_part(text)
            item = {**item, "status": "completed", "content": [part]}
            events = self._event("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
            events += self._event("response.content_part.done", **where, content_index=0, part=part)
        else:
            item = {**item, "status": "completed"}
            events = self._event("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
        self._output.append(item)
        return events + self._event("response.output_item.done", output_index=where["output_index"], item=item)

    def _close_held(self, held: dict[str, Any]) -> bytes:
        """A computer call's item, added and done at once (a function_call when its arguments are no action)."""
        self._held = False
        position = next(index for index, at in self._calls.items() if at == len(self._output))
        call_id, arguments = held["call_id"], held["arguments"]
        item = tool_call_item(self._ids, position, call_id, COMPUTER, arguments, self._request, self._names)
        where = {"item_id": item["id"], "output_index": len(self._output)}
        added = {**item, "status": "in_progress"}
        events = self._event("response.output_item.added", output_index=where["output_index"], item=added)
        if item["type"] == "function_call":
            events += self._event("response.function_call_arguments.delta", **where, delta=arguments)
            events += self._event("response.function_call_arguments.done", **where, name=item["name"], arguments=arguments)
        self._output.append(item)
        return events + self._event("response.output_item.done", output_index=where["output_index"], item=item)

    def error(self, err: ProxyError) -> bytes:
        self._failed = True
        head = b"" if self._started else self._start({})
        failure = {"code": error_code(err), "message": err.message}
        return head + self._event("response.failed", response=self._body("failed", error=failure))

    def end(self) -> bytes:
        if self._failed:
            return b""
        head = b"" if self._started else self._start({})
        head += self._close()
        status, incomplete = status_of(self._finish)
        response = self._body(status, usage=usage(self._usage, self._prompt_tokens), incomplete=incomplete)
        return head + self._event(f"response.{status}", response=response)
