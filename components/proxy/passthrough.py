"""A Messages teacher (`--teacher --teacher-api messages`): calls pass through as they were sent.

A Messages-speaking harness (Claude Code) recorded against an Anthropic Messages teacher
gets the teacher's own answers: the request goes out as the harness sent it (the teacher's
model named, the harness's ``anthropic-*`` headers kept, the key as ``x-api-key``), and the
Message or its event stream comes back as it came (event for event), thinking blocks and
signatures included. The record is a text-only call like any teacher's: ``response`` is the teacher's
Message (a stream's reassembled), and the translation keeps the chat request the call
becomes, which SFT tokenizes with the student's template (components/trainer/text_calls.py).

The durability contract is the other calls': a Message is recorded before it is returned,
and a stream's ``message_stop`` event is held until the call is on disk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from components.proxy.call_record import Call
from components.proxy.errors import ProxyError, upstream_status_error
from components.proxy.http_client import Response
from components.proxy.upstream import Upstream

_FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
_DEFAULT_VERSION = "2023-06-01"  # the one version Anthropic's API has published
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# (call, the Message or None, HTTP status, error or None) -> the record is on disk
RecordCall = Callable[[Call, dict[str, Any] | None, int, str | None], Awaitable[None]]
FailCall = Callable[[Call, ProxyError, int], Awaitable[web.StreamResponse]]


def refuse_other_surfaces(api: str) -> None:
    """A Messages teacher answers Messages calls only: anything else would need a translation it cannot get."""
    if api != "anthropic.messages":
        raise ProxyError(
            400,
            f"this proxy records an Anthropic Messages teacher (--teacher-api messages), and this is a {api} call: "
            "record a harness that speaks Messages (Claude Code) with it, or record this one against a chat teacher "
            "(--teacher-api chat; teacher.api: chat)",
            code="unsupported_surface",
        )


class MessagesPassthrough:
    def __init__(self, upstream: Upstream, record: RecordCall, fail: FailCall) -> None:
        self._upstream, self._record, self._fail = upstream, record, fail

    async def answer(self, request: web.Request, call: Call) -> web.StreamResponse:
        body = orjson.dumps({**call.request, "model": call.model} if call.model else call.request)
        headers = {name: request.headers[name] for name in _FORWARDED_HEADERS if name in request.headers}
        headers.setdefault("anthropic-version", _DEFAULT_VERSION)
        try:
            resp = await self._upstream.post_messages(body, call, headers)
        except ProxyError as err:
            return await self._fail(call, err, 0)
        try:
            if resp.status != 200 or not call.stream:
                return await self._whole(call, resp)
            call.engine_answered(resp.headers)
            return await self._relay(request, call, resp)
        finally:
            if resp.at_eof():
                resp.release()
            else:
                resp.close()  # a harness that left mid-stream must not keep the teacher generating

    async def _whole(self, call: Call, resp: Response) -> web.StreamResponse:
        try:
            payload = await resp.read()
        except OSError as exc:
            return await self._fail(call, self._upstream.failure(exc), resp.status)
        if resp.status != 200:
            err = upstream_status_error(resp.status, payload, self._upstream.base_url, resp.headers.get("Retry-After"))
            return await self._fail(call, err, resp.status)
        call.engine_answered(resp.headers)
        try:
            message = orjson.loads(payload)
        except orjson.JSONDecodeError:
            message = None
        if not isinstance(message, dict):
            err = ProxyError(502, f"the teacher answered 200 with no Message: {payload[:200]!r}", code="upstream_invalid")
            return await self._fail(call, err, 200)
        await self._record(call, message, 200, None)
        return web.Response(body=payload, content_type="application/json")

    async def _relay(self, request: web.Request, call: Call, resp: Response) -> web.StreamResponse:
        out = web.StreamResponse(status=200, headers=_SSE_HEADERS)
        await out.prepare(request)
        message = MessageAssembler()
        pending, stopped = b"", False
        try:
            while True:
                try:
                    data = await resp.readany()
                except OSError as exc:
                    raise self._upstream.failure(exc) from exc
                if not data:
                    break
                pending += data
                complete, pending = _split_events(pending)
                for event in complete:
                    kind = message.add(event)
                    if kind == "message_stop" and not stopped:
                        stopped = True  # recorded before the harness sees its call end
                        await self._record(call, message.message, 200, message.error)
                    await out.write(event)
        except ProxyError as err:
            if not stopped:
                await self._record(call, message.message, 200, err.message)
            error = {"type": "error", "error": {"type": "api_error", "message": err.message}}
            await out.write_eof(b"event: error\ndata: " + orjson.dumps(error) + b"\n\n")
            return out
        except ConnectionError:
            if not stopped:
                await self._record(call, message.message, 200, "client disconnected before the end of the stream")
            return out
        if not stopped:
            await self._record(call, message.message, 200, message.error or "the teacher's stream ended before message_stop")
        await out.write_eof(pending)
        return out


def _split_events(data: bytes) -> tuple[list[bytes], bytes]:
    """Whole server-sent events (each with its blank line), and the incomplete rest."""
    data = data.replace(b"\r\n", b"\n")
    *events, rest = data.split(b"\n\n")
    return [event + b"\n\n" for event in events if event.strip()], rest


class MessageAssembler:
    """The Message an Anthropic event stream describes, as a non-streamed answer would hold it."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.error: str | None = None
        self._json: dict[int, str] = {}  # tool_use input, as partial JSON, by block index

    def add(self, event: bytes) -> str | None:
        """Take one event; its type."""
        data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
        try:
            body = orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            self.error = f"the teacher sent an event that is not JSON: {data[:200]!r}"
            return None
        if not isinstance(body, dict):
            return None
        kind = body.get("type")
        if kind == "message_start" and isinstance(body.get("message"), dict):
            self.message = {**body["message"], "content": list(body["message"].get("content") or [])}
        elif kind == "error":
            self.error = f"the teacher's stream failed: {orjson.dumps(body.get('error')).decode()[:300]}"
        elif self.message is not None:
            self._apply(kind, body)
        return kind if isinstance(kind, str) else None

    def _apply(self, kind: Any, body: dict[str, Any]) -> None:
        content, index = self.message["content"], body.get("index")
        if kind == "content_block_start" and isinstance(index, int) and isinstance(body.get("content_block"), dict):
            content.extend({} for _ in range(index + 1 - len(content)))
            content[index] = dict(body["content_block"])
        elif kind == "content_block_delta" and isinstance(index, int) and index < len(content):
            _apply_delta(content[index], body.get("delta") or {}, self._json, index)
        elif kind == "content_block_stop" and isinstance(index, int) and index in self._json:
            try:
                content[index]["input"] = orjson.loads(self._json.pop(index) or b"{}")
            except orjson.JSONDecodeError as exc:
                self.error = f"the teacher's tool_use input is not JSON: {exc}"
        elif kind == "message_delta":
            delta = body.get("delta") or {}
            self.message.update({k: v for k, v in delta.items() if k in ("stop_reason", "stop_sequence")})
            if isinstance(body.get("usage"), dict):
                self.message["usage"] = {**(self.message.get("usage") or {}), **body["usage"]}


def _apply_delta(block: dict[str, Any], delta: dict[str, Any], partial_json: dict[int, str], index: int) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + str(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
