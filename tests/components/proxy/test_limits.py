"""The proxy's limits: calls in flight (429 + Retry-After), session file size and body size (413).

Every refusal is answered at once in the surface's own error shape, names the option that
raises the limit, never reaches the engine and is not recorded.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import orjson
import pytest
from aiohttp import web

from components.core import read_session

GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
# One request per surface, and how to read the error it gets back.
SURFACES = {
    "chat": ("/v1/chat/completions", GOOD),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
}


def _error(surface: str, response: httpx.Response) -> tuple[str, str | None]:
    """(message, code) from the surface's own error shape, checking that shape."""
    body = response.json()
    if surface == "messages":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"} and "request_id" in body
        return body["error"]["message"], None
    assert set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]["message"], body["error"]["code"]


def _wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_call_over_max_in_flight_gets_429_with_retry_after_in_each_surface_shape(
    fake_engine, make_proxy: Callable[..., str], loop_thread, tmp_path: Path
) -> None:
    fake_engine.gate = asyncio.Event()
    proxy = make_proxy(fake_engine.url, max_in_flight=1, retry_after_s=3)
    holder: dict[str, Any] = {}

    def hold_the_only_slot() -> None:
        with httpx.stream("POST", f"{proxy}/s/held/v1/chat/completions", json={**GOOD, "stream": True}) as resp:
            holder["body"] = b"".join(resp.iter_bytes())

    thread = threading.Thread(target=hold_the_only_slot)
    thread.start()
    _wait_for(lambda: len(fake_engine.requests) == 1)  # the held call is at the engine, paused mid-stream
    try:
        for surface, (path, body) in SURFACES.items():
            t0 = time.monotonic()
            response = httpx.post(f"{proxy}/s/busy-{surface}{path}", json=body)
            assert time.monotonic() - t0 < 2.0  # answered at once, not queued behind the held call
            assert response.status_code == 429 and response.headers["Retry-After"] == "3"
            message, code = _error(surface, response)
            assert "1 calls at once" in message and "--max-in-flight" in message
            assert code in (None, "proxy_overloaded")
            if surface == "messages":
                assert response.json()["error"]["type"] == "rate_limit_error"
        health = httpx.get(f"{proxy}/health").json()
        assert health["calls_refused_busy"] == 3 and health["calls_in_flight"] == 1
    finally:
        loop_thread.call_soon(fake_engine.gate.set)
        thread.join(10)
    assert len(fake_engine.requests) == 1  # refused calls never reached the engine...
    assert sorted(p.name for p in (tmp_path / "out").glob("*.jsonl")) == ["held.jsonl"]  # ...nor a file
    assert b"[DONE]" in holder["body"]
    assert httpx.post(f"{proxy}/s/after/v1/chat/completions", json=GOOD).status_code == 200  # the slot came back
    assert httpx.get(f"{proxy}/health").json()["calls_in_flight"] == 0


def test_retry_after_is_sent_even_when_configured_to_zero(fake_engine, make_proxy: Callable[..., str], loop_thread) -> None:
    fake_engine.gate = asyncio.Event()
    proxy = make_proxy(fake_engine.url, max_in_flight=1, retry_after_s=0)
    thread = threading.Thread(
        target=lambda: httpx.post(f"{proxy}/s/held/v1/chat/completions", json={**GOOD, "stream": True}, timeout=20)
    )
    thread.start()
    _wait_for(lambda: len(fake_engine.requests) == 1)
    try:
        response = httpx.post(f"{proxy}/s/other/v1/responses", json=SURFACES["responses"][1])
        assert response.status_code == 429 and response.headers["Retry-After"] == "0"
    finally:
        loop_thread.call_soon(fake_engine.gate.set)
        thread.join(10)


class BigStreamEngine:
    """An engine whose streamed answers are far larger than every socket buffer on the way."""

    CHUNKS = 4000
    PIECE = "x" * 65536

    def __init__(self) -> None:
        self.sent = 0
        self.finished = False

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "big", "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        head = {"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 0, "model": "big"}
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop", "token_ids": [7]}
            return web.json_response({**head, "object": "chat.completion", "choices": [choice], "prompt_token_ids": [1]})
        out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        for _ in range(self.CHUNKS):
            chunk = {**head, "choices": [{"index": 0, "delta": {"content": self.PIECE}, "token_ids": [5]}]}
            await out.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
            self.sent += 1
        last = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "token_ids": [2]}]}
        await out.write(b"data: " + orjson.dumps(last) + b"\n\ndata: [DONE]\n\n")
        self.finished = True
        return out


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


def test_a_client_that_stops_reading_its_stream_does_not_stall_other_sessions(
    make_proxy: Callable[..., str], loop_thread, tmp_path: Path
) -> None:
    engine = BigStreamEngine()
    runner, url = loop_thread.run(_serve(engine.app()))
    try:
        proxy = make_proxy(url)
        host, port = proxy.removeprefix("http://").split(":")
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and it never reads
        slow.connect((host, int(port)))
        body = orjson.dumps({**GOOD, "stream": True})
        head = f"POST /s/slow/v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        slow.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        # Wait until backpressure reaches the engine: its writes stop, far from the end of the answer.
        _wait_for(lambda: engine.sent > 0, timeout=20)
        previous = -1
        while previous != engine.sent:
            previous = engine.sent
            time.sleep(0.5)
        assert not engine.finished and engine.sent < engine.CHUNKS
        for i in range(5):
            t0 = time.monotonic()
            response = httpx.post(f"{proxy}/s/fast-{i}/v1/chat/completions", json=GOOD, timeout=10)
            assert response.status_code == 200 and time.monotonic() - t0 < 2.0
        assert not engine.finished  # the slow stream was still held while the others were served
        slow.close()
        path = tmp_path / "out" / "slow.jsonl"
        # One write() puts the record in the file, but a reader may see it half copied: wait for its end.
        _wait_for(lambda: path.exists() and path.read_bytes().endswith(b"\n"), timeout=20)
        [call] = read_session(path)
        assert not call.ok and "client disconnected" in call.error  # recorded, not lost
    finally:
        loop_thread.run(runner.cleanup())


@pytest.mark.parametrize("surface", list(SURFACES))
def test_session_over_max_session_mb_is_refused_with_413_and_its_file_kept(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path, surface: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    before = b'{"earlier": "run"}\n' * 100  # a file left by an earlier proxy run, larger than the cap
    (out / "full.jsonl").write_bytes(before)
    proxy = make_proxy(fake_engine.url, max_session_mb=1000 / 2**20)
    path, body = SURFACES[surface]
    response = httpx.post(f"{proxy}/s/full{path}", json=body)
    assert response.status_code == 413
    message, code = _error(surface, response)
    assert "'full'" in message and "--max-session-mb" in message and code in (None, "session_too_large")
    assert (out / "full.jsonl").read_bytes() == before and not fake_engine.requests
    assert httpx.get(f"{proxy}/health").json()["calls_refused_session_too_large"] == 1


def test_session_reaching_the_cap_while_recording_takes_no_more_calls(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    proxy = make_proxy(fake_engine.url, max_session_mb=3000 / 2**20)
    statuses = [httpx.post(f"{proxy}/s/grow/v1/chat/completions", json=GOOD).status_code for _ in range(6)]
    path = tmp_path / "out" / "grow.jsonl"
    recorded = read_session(path)
    assert statuses == [200] * len(recorded) + [413] * (6 - len(recorded)) and 0 < len(recorded) < 6
    assert path.stat().st_size > 3000  # the call that crossed the cap was kept; later ones were refused
    assert httpx.post(f"{proxy}/s/other/v1/chat/completions", json=GOOD).status_code == 200  # per session


@pytest.mark.parametrize("surface", list(SURFACES))
def test_oversized_body_gets_413_in_the_surface_shape(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path, surface: str
) -> None:
    proxy = make_proxy(fake_engine.url, max_request_mb=0.01)
    path, body = SURFACES[surface]
    big = {**body, "metadata": {"padding": "x" * 20_000}}
    response = httpx.post(f"{proxy}/s/big{path}", json=big)
    assert response.status_code == 413
    message, code = _error(surface, response)
    assert "--max-request-mb" in message and code in (None, "request_too_large")
    assert not fake_engine.requests and not (tmp_path / "out" / "big.jsonl").exists()
    assert httpx.get(f"{proxy}/health").json()["calls_in_flight"] == 0
