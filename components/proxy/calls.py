"""One model call through the proxy: decode, forward, answer the harness, record.

The order is the durability contract: a non-streamed answer is recorded before it is
sent; a stream's events are forwarded as they arrive and the record is written before
the stream's closing event, so a harness that saw its call complete has it on disk.
Every call that reached the upstream is recorded, failures included.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import logging
import time
from typing import Any, Awaitable

import orjson
from aiohttp import web

from components.core.rollout_identity import route_parts
from components.proxy.call_record import Call
from components.proxy.call_tags import CallTagger
from components.proxy.config import ProxyConfig
from components.proxy.conversations import Conversations
from components.proxy.errors import ProxyError, bad_request, error_response, upstream_status_error
from components.proxy.http_client import Response
from components.proxy.images import ImageStore, may_hold_images, record_images
from components.proxy.limits import Admission
from components.proxy.passthrough import MessagesPassthrough, refuse_other_surfaces
from components.proxy.provenance import TokenProvenance
from components.proxy.recorder import Recorder, RecordingError
from components.proxy.restore import SessionRestorer
from components.proxy.retries import deliver
from components.proxy.sessions import call_session, check_path_attempt
from components.proxy.surfaces import Surface
from components.proxy.surfaces.messages import MessagesSurface
from components.proxy.upstream import Upstream
from components.proxy.upstream_chat import (
    ChatStreamAssembler,
    Completion,
    call_seed,
    extract_completion,
    prepare_upstream_body,
)
from components.proxy.upstream_events import ChunkReader, decode_object

_log = logging.getLogger(__name__)
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_NO_COMPLETION = Completion()
_DRAIN_TIMEOUT_S = 5.0
# A passed-through Message's stop_reason as the chat finish_reason records keep.
_CHAT_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


class _EventStream(web.StreamResponse):
    """A streamed answer whose headers leave with its first events, in one send.

    aiohttp sends a StreamResponse's headers alone at ``prepare`` unless told otherwise
    (``web.Response`` is, through this class attribute): a send more, and a harness that
    wakes once for the headers and again for the events. Were the attribute gone from a
    later aiohttp, headers would simply go first again.
    """

    _send_headers_immediately = False


class CallHandler:
    """Serves the model-call routes of every surface."""

    def __init__(self, config: ProxyConfig, upstream: Upstream, recorder: Recorder) -> None:
        self._config = config
        self._upstream = upstream
        self._recorder = recorder
        self._tagger = CallTagger()
        self._provenance = TokenProvenance(upstream, config.parsers) if config.provenance_on else None
        self.restorer = SessionRestorer(config.out, self._tagger, self._provenance)
        self._images = ImageStore(config.out, fsync=config.fsync)
        self._conversations = Conversations(config.responses_store_mb)
        self.admission = Admission(config, recorder)
        self._passthrough = None
        if config.teacher_api == "messages":
            self._passthrough = MessagesPassthrough(upstream, self._record_teacher, self._fail_passthrough)

    async def handle(self, request: web.Request, surface: Surface) -> web.StreamResponse:
        admission = self.admission
        try:
            session_id = call_session(route_parts(request.match_info)[0], request.headers)
            admission.admit(request.headers, session_id)
        except ProxyError as err:
            return _error_response(surface, err)  # refused before the upstream saw it: nothing to record
        admission.in_flight += 1
        try:
            return await self._handle(request, surface, session_id)
        except web.HTTPRequestEntityTooLarge as exc:
            return _error_response(surface, admission.request_too_large(exc))
        finally:
            admission.in_flight -= 1

    async def _handle(self, request: web.Request, surface: Surface, session_id: str) -> web.StreamResponse:
        started_at, t0 = time.time(), time.perf_counter()
        try:
            call, upstream_body = await self._begin(request, surface, session_id, started_at, t0)
        except ProxyError as err:
            return _error_response(surface, err)  # refused before the upstream saw it: nothing to record
        if self._passthrough is not None:
            return await self._passthrough.answer(request, call)
        if call.stream:
            return await self._stream(request, surface, call, upstream_body)
        return await self._complete(surface, call, upstream_body)

    async def _begin(
        self, request: web.Request, surface: Surface, session_id: str, started_at: float, t0: float
    ) -> tuple[Call, bytes]:
        path_attempt = route_parts(request.match_info)[1]
        attempt_number = 0 if path_attempt is None else check_path_attempt(path_attempt)
        raw = await request.read()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"request body is not valid JSON: {exc}") from None
        parsed = surface.parse(body)
        if self._passthrough is not None:
            refuse_other_surfaces(surface.api)
        digest = _digest(parsed)  # first: it also refuses what could not be recorded
        await self.restorer.ensure(session_id)  # a restarted proxy learns the session's earlier calls
        stream = surface.is_stream(parsed)
        # A Responses call naming previous_response_id is translated as the whole conversation.
        expanded, continued = self._conversations.expand(session_id, surface.api, parsed)
        chat_request, notes = surface.to_upstream(expanded)
        # Also keeps the policy version fresh; a Messages teacher is named (--served-model), never listed.
        models = None if self._passthrough is not None else await self._upstream.models()
        model = self._config.served_model or (models.first_id if models is not None else None)
        base_seed = self._config.sampling_seed
        seed = None if base_seed is None else call_seed(base_seed, session_id, attempt_number, chat_request)
        teacher = self._config.teacher
        upstream_body, sampling = prepare_upstream_body(
            chat_request, model=model, training=self._config.training, stream=stream, seed=seed, teacher=teacher,
            temperature=self._config.training_temperature,
        )  # fmt: skip
        translation = None if notes is None else {"upstream_request": upstream_body, **dataclasses.asdict(notes)}
        if continued is not None:
            translation["previous_response"] = continued.note()
        # Images are checked and stored before the engine sees the call: a bad one is a 400, and
        # every image is on disk before the record that refers to it.
        known = None if continued is None else continued.refs
        images = None
        if known or may_hold_images(surface.api, raw):  # tested here: an image-free call awaits nothing more
            images = await record_images(self._images, parsed, upstream_body if notes is not None else None, known)
            if translation is not None:
                translation["upstream_request"] = images.upstream_request
        route = None if self._provenance is None else await self._provenance.route(session_id, upstream_body)
        attempt = self._tagger.arrive(session_id, surface.api, parsed, digest, request.headers, attempt=attempt_number)
        call = Call(
            session_id, surface.api, stream, upstream_body.get("model"), parsed, sampling, started_at, t0,
            digest, attempt, translation, route, parsed if images is None else images.request,
            [] if images is None else images.pointers, text_only=teacher,
        )  # fmt: skip
        if self._conversations.keeps(surface.api, expanded):
            refs = images.refs if images is not None else known or {}
            cost = len(raw) + (0 if continued is None else continued.cost)
            call.on_recorded = lambda response, index: self._conversations.remember(
                session_id, surface.api, expanded, response, call_index=index, refs=refs, cost=cost
            )
        return call, orjson.dumps(upstream_body if route is None or route.body is None else route.body)

    def _post(self, call: Call, body: bytes) -> Awaitable[Response]:
        post = self._upstream.post_chat
        if call.route is not None and call.route.as_chat is not None:
            post = self._upstream.post_completions
        return deliver(functools.partial(post, call=call), body, call, self._config.upstream_retries)

    async def _complete(self, surface: Surface, call: Call, upstream_body: bytes) -> web.Response:
        status = 0
        try:
            resp = await self._post(call, upstream_body)
            status = resp.status
            try:
                payload = await resp.read()
            except OSError as exc:
                raise self._upstream.failure(exc) from exc
            finally:
                resp.release()
            if status != 200:
                raise upstream_status_error(status, payload, self._upstream.base_url, resp.headers.get("Retry-After"))
            call.engine_answered(resp.headers)
            chat = decode_object(payload)
            if call.route is not None and call.route.as_chat is not None:
                chat = call.route.as_chat.answer(chat)
        except ProxyError as err:
            return await self._fail(surface, call, err, status)
        completion = extract_completion(chat, call.text_only)
        response = surface.to_client(chat, call.request)
        try:
            await self._record(call, response, completion, status, completion.problem, chat=chat)
        except RecordingError as exc:
            return _error_response(surface, _recording_failed(exc))
        return web.Response(body=orjson.dumps(response), content_type="application/json")

    async def _stream(
        self, request: web.Request, surface: Surface, call: Call, upstream_body: bytes
    ) -> web.StreamResponse:
        try:
            resp = await self._post(call, upstream_body)
        except ProxyError as err:
            return await self._fail(surface, call, err, 0)
        try:
            if resp.status != 200:
                try:
                    payload = await resp.read()
                except OSError as exc:
                    return await self._fail(surface, call, self._upstream.failure(exc), resp.status)
                err = upstream_status_error(resp.status, payload, self._upstream.base_url, resp.headers.get("Retry-After"))
                return await self._fail(surface, call, err, resp.status)
            call.engine_answered(resp.headers)
            return await self._relay(request, surface, call, resp)
        finally:
            # A fully read answer returns its connection to the pool; anything else is cut,
            # so a harness that left mid-stream does not keep the engine generating.
            if resp.at_eof():
                resp.release()
            else:
                resp.close()

    async def _relay(
        self, request: web.Request, surface: Surface, call: Call, resp: Response
    ) -> web.StreamResponse:
        out = _EventStream(status=200, headers=_SSE_HEADERS)
        translator = surface.stream(call.request)
        assembler = ChatStreamAssembler()
        reader = ChunkReader()
        as_chat = None if call.route is None or call.route.as_chat is None else call.route.as_chat.chunks
        failure: ProxyError | None = None
        # Events held back for the closing send: those of the read that completed the answer
        # and of every read after it (usage, [DONE]). They go out once the call is recorded.
        held = b""
        try:
            await out.prepare(request)
            # Read, translate and write in this one loop, no generator in between: each
            # await layer costs a resumption per read on the proxy's hottest path.
            while True:
                try:
                    data = await resp.readany()  # b"" once the upstream ended
                except OSError as exc:
                    raise self._upstream.failure(exc) from exc
                chunks = reader.feed(data) if data else reader.close()
                if as_chat is not None:
                    chunks = [chat_chunk for chunk in chunks for chat_chunk in as_chat(chunk)]
                for chunk in chunks:
                    assembler.add(chunk)
                if reader.failure is not None:
                    raise reader.failure
                events = translator.events(chunks)
                if held or reader.done or not data or assembler.finished:
                    held += events
                    if reader.done or not data:
                        break
                elif events:  # an empty write would be pointless (suppressed chunks)
                    await out.write(events)
        except ProxyError as err:
            failure = err
        except ConnectionError:  # the harness went away; what was sampled is still recorded
            await self._record_quietly(call, surface, assembler, "client disconnected before the end of the stream")
            return out
        except asyncio.CancelledError:
            await self._record_quietly(call, surface, assembler, "call cancelled before the end of the stream")
            raise
        except Exception as exc:  # a chunk the surface cannot translate: fail this call, not the proxy
            _log.exception("cannot relay the upstream stream")
            failure = ProxyError(502, f"upstream stream could not be relayed: {exc!r}", code="upstream_invalid")

        if failure is None and _client_gone(request):  # it would never see the events held for the end
            await self._record_quietly(call, surface, assembler, "client disconnected before the end of the stream")
            return out
        error = failure.message if failure else assembler.error
        if error is None and not reader.done and not assembler.finished:
            error = "upstream stream ended before [DONE]"
        try:
            await self._record_stream(call, surface, assembler, error=error)
        except RecordingError as exc:
            failure = _recording_failed(exc)
        try:
            # One send for the held events, the closing event and the end of the chunked body:
            # the harness wakes once for the end of its call, and sees the answer complete
            # (its finish reason) only once the call is on disk.
            await out.write_eof(held + (translator.error(failure) if failure else translator.end()))
        except ConnectionError:
            return out
        if reader.done and not resp.at_eof():  # usually the upstream's end came with [DONE]
            await _drain(resp)
        return out

    async def _record_quietly(self, call: Call, surface: Surface, assembler: ChatStreamAssembler, error: str) -> None:
        try:
            await self._record_stream(call, surface, assembler, error=error)
        except RecordingError:
            _log.exception("could not record an interrupted call in session %s", call.session_id)

    async def _record_stream(self, call: Call, surface: Surface, assembler: ChatStreamAssembler, *, error: str | None) -> None:
        chat = assembler.completion()
        completion = extract_completion(chat, call.text_only)
        response = surface.to_client(chat, call.request)
        await self._record(call, response, completion, 200, error or completion.problem, chat=chat)

    async def _record_teacher(self, call: Call, message: dict[str, Any] | None, status: int, error: str | None) -> None:
        stop = None if message is None else _CHAT_FINISH.get(message.get("stop_reason"))
        await self._record(call, message, Completion(finish_reason=stop), status, error)

    async def _fail_passthrough(self, call: Call, err: ProxyError, upstream_status: int) -> web.Response:
        return await self._fail(MessagesSurface(), call, err, upstream_status)

    async def _fail(self, surface: Surface, call: Call, err: ProxyError, upstream_status: int) -> web.Response:
        _log.warning("call in session %s failed: %s", call.session_id, err.message)
        try:
            await self._record(call, None, _NO_COMPLETION, upstream_status, err.message)
        except RecordingError as exc:
            err = _recording_failed(exc)
        return _error_response(surface, err)

    async def _record(
        self, call: Call, response: dict[str, Any] | None, completion: Completion, status: int, error: str | None,
        chat: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        if self._provenance is not None and call.route is not None and chat is not None:
            self._provenance.answered(call.route, chat)
        record = call.record(
            policy_version=self._upstream.policy_version(call.model),
            response=response,
            completion=completion,
            upstream_status=status,
            error=error or call.sampling_problem,
        )
        index = self._recorder.write(call.session_id, record)
        call.attempt.recorded(index)
        if call.on_recorded is not None and record["error"] is None:
            call.on_recorded(response, index)
        if self._provenance is not None and call.route is not None and chat is not None and record["error"] is None:
            # Only once on disk: an answer the harness may echo is one the trajectory holds.
            self._provenance.remember(
                call.session_id, call.route, completion.prompt_token_ids, completion.completion_token_ids, index
            )
        if self._recorder.fsync_each:
            await self._recorder.sync([call.session_id])


async def _drain(resp: Response) -> None:
    """Read the upstream to its end after [DONE] so its connection can be reused."""
    try:
        async with asyncio.timeout(_DRAIN_TIMEOUT_S):
            while await resp.readany():
                pass
    except OSError:
        pass  # the connection is closed instead of reused


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _digest(parsed: dict[str, Any]) -> str:
    try:
        canonical = orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        # orjson reads JSON nested up to 1024 levels but writes only 254: such a request
        # could be neither digested nor recorded, so it is refused before the upstream.
        raise bad_request(f"request body cannot be recorded ({exc}); nest it less deeply") from None
    return hashlib.sha256(canonical).hexdigest()


def _recording_failed(exc: RecordingError) -> ProxyError:
    # Withholding the answer keeps trajectories complete: the harness retries, nothing goes unrecorded.
    return ProxyError(500, f"the proxy could not record this call ({exc.strerror}); answer withheld", code="recording_failed")


def _error_response(surface: Surface, err: ProxyError) -> web.Response:
    return error_response(err, surface.error_body(err))
