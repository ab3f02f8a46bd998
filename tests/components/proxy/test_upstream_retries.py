"""Requests the engine never received are sent again after a backoff; anything it answered never is."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import orjson
import pytest
from aiohttp import web

from components.core import read_session
from tests._servers import unshared_port

GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def _serve_on(app: web.Application, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


@pytest.mark.parametrize("stream", [False, True])
def test_engine_that_comes_up_during_the_backoff_gets_the_call(
    fake_engine, make_proxy: Callable[..., str], loop_thread, tmp_path: Path, stream: bool
) -> None:
    port = unshared_port()  # nothing else may take it before the late server binds it
    proxy = make_proxy(f"http://127.0.0.1:{port}", upstream_retries=3)
    result: dict[str, Any] = {}

    def call() -> None:
        result["response"] = httpx.post(f"{proxy}/s/late/v1/chat/completions", json={**GOOD, "stream": stream}, timeout=30)

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.3)  # the first attempt was refused; the backoff (0.25 s doubling) spans at least 0.875 s
    runner = loop_thread.run(_serve_on(fake_engine.app(), port))  # a real server, late, on the same port
    try:
        thread.join(30)
        response = result["response"]
        assert response.status_code == 200
        assert (b"[DONE]" in response.content) if stream else response.json()["choices"][0]["message"]["content"]
        [record] = read_session(tmp_path / "out" / "late.jsonl")
        assert record.ok and record.tags["upstream_attempts"] >= 2
        assert len(fake_engine.requests) == 1  # the failed attempts never reached it, the last one did, once
    finally:
        loop_thread.run(runner.cleanup())


@pytest.mark.parametrize("stream", [False, True])
def test_engine_that_never_comes_is_502_after_the_bounded_attempts(
    make_proxy: Callable[..., str], tmp_path: Path, stream: bool
) -> None:
    dead = f"http://127.0.0.1:{unshared_port()}"
    proxy = make_proxy(dead, upstream_retries=2)
    t0 = time.monotonic()
    response = httpx.post(f"{proxy}/s/s1/v1/chat/completions", json={**GOOD, "stream": stream}, timeout=30)
    elapsed = time.monotonic() - t0
    assert response.status_code == 502
    message = response.json()["error"]["message"]
    assert dead in message and "connection refused" in message and "after 3 attempts" in message
    assert 0.35 <= elapsed < 5  # two backoffs (0.125-0.25 s, then 0.25-0.5 s), no more
    [record] = read_session(tmp_path / "out" / "s1.jsonl")
    assert not record.ok and record.upstream_status == 0 and record.tags == {"upstream_attempts": 3}


def test_zero_retries_fails_on_the_first_refusal_without_the_tag(make_proxy: Callable[..., str], tmp_path: Path) -> None:
    proxy = make_proxy(f"http://127.0.0.1:{unshared_port()}", upstream_retries=0)
    response = httpx.post(f"{proxy}/s/s1/v1/chat/completions", json=GOOD)
    assert response.status_code == 502 and "attempts" not in response.json()["error"]["message"]
    [record] = read_session(tmp_path / "out" / "s1.jsonl")
    assert record.tags == {}


class _ClosesFirstConnection:
    """An engine that reads the first chat request and closes the connection without a byte of answer."""

    def __init__(self) -> None:
        self.posts = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
                )
                await reader.readexactly(length)
                if not head.startswith(b"POST"):
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                self.posts += 1
                if self.posts == 1:
                    return  # closed in the finally, before any response header
                completion = {
                    "id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop",
                                 "token_ids": [7], "logprobs": {"content": [{"token": "ok", "logprob": -0.5}]}}],
                    "prompt_token_ids": [1],
                }  # fmt: skip
                body = orjson.dumps(completion)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def test_connection_closed_before_any_response_header_is_sent_again(
    make_proxy: Callable[..., str], loop_thread, tmp_path: Path
) -> None:
    engine = _ClosesFirstConnection()
    server = loop_thread.run(asyncio.start_server(engine.handle, "127.0.0.1", 0))
    try:
        port = server.sockets[0].getsockname()[1]
        proxy = make_proxy(f"http://127.0.0.1:{port}")
        response = httpx.post(f"{proxy}/s/s1/v1/chat/completions", json=GOOD, timeout=30)
        assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "ok"
        assert engine.posts == 2
        [record] = read_session(tmp_path / "out" / "s1.jsonl")
        assert record.ok and record.tags["upstream_attempts"] == 2
    finally:
        server.close()


def test_nothing_is_sent_again_once_the_engine_answered_or_has_the_request(
    fake_engine, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    proxy = make_proxy(fake_engine.url, upstream_timeout_s=0.3)
    fake_engine.fail_status = 503  # an answer: the engine may have done work
    assert httpx.post(f"{proxy}/s/a/v1/chat/completions", json=GOOD).status_code == 503
    fake_engine.fail_status = None
    fake_engine.hang_s = 1.0  # a read timeout: the engine has the request and is generating
    assert httpx.post(f"{proxy}/s/b/v1/chat/completions", json=GOOD).status_code == 504
    fake_engine.hang_s = 0
    fake_engine.cut_stream = True  # cut mid-answer: tokens were sampled and sent
    with httpx.stream("POST", f"{proxy}/s/c/v1/chat/completions", json={**GOOD, "stream": True}) as response:
        b"".join(response.iter_bytes())
    assert len(fake_engine.requests) == 3
    for session in "abc":
        [record] = read_session(tmp_path / "out" / f"{session}.jsonl")
        assert not record.ok and "upstream_attempts" not in record.tags
