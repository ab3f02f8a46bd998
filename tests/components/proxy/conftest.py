"""Fixtures for the proxy tests: a background event loop, a scripted fake engine, and proxies.

The fake engine imitates vLLM's chat completions with ``return_token_ids`` and logprobs,
and can be told to fail, hang, or pause mid-stream; the dev engine (tests/conftest.py)
covers the real-model paths.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from components.proxy import ProxyConfig, start_proxy

FAKE_MODEL = "fake-policy"
FAKE_POLICY_VERSION = "step-7"
FAKE_PROMPT_IDS = [1, 2, 3]
FAKE_TOKENS = [("Hel", 11, -0.5), ("lo", 12, -0.25), (" world", 13, -0.125), ("", 2, -0.0625)]
FAKE_TEXT = "Hello world"


class LoopThread:
    """An asyncio loop in a daemon thread, so plain (sync) tests can talk to servers running in it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any, timeout: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call_soon(self, fn: Callable[[], Any]) -> None:
        self.loop.call_soon_threadsafe(fn)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@dataclass
class FakeEngine:
    """A vLLM look-alike whose behaviour each test scripts through these attributes."""

    # What every successful call answers, for tests to compare with.
    MODEL = FAKE_MODEL
    POLICY_VERSION = FAKE_POLICY_VERSION
    PROMPT_IDS = FAKE_PROMPT_IDS
    TEXT = FAKE_TEXT
    TOKEN_IDS = [token_id for _, token_id, _ in FAKE_TOKENS]
    LOGPROBS = [logprob for _, _, logprob in FAKE_TOKENS]

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_status: int | None = None  # answer chat calls with this HTTP error
    fail_calls: int | None = None  # with fail_status: only this many chat calls fail, then the engine recovers
    hang_s: float = 0.0  # wait this long before answering chat calls
    gate: asyncio.Event | None = None  # pause streams after the first token until set
    released_by_gate: bool | None = None  # whether the paused stream resumed because the gate was set
    end_gate: asyncio.Event | None = None  # pause streams after their finishing chunk until set
    at_end: threading.Event = field(default_factory=threading.Event)  # set when that pause begins
    cut_stream: bool = False  # drop the connection after the first token
    # Answer with these tool calls ({"name", "arguments": JSON text}) instead of the text.
    tool_calls: list[dict[str, str]] | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        entry = {"id": FAKE_MODEL, "object": "model", "root": "/models/fake", "policy_version": FAKE_POLICY_VERSION}
        return web.json_response({"object": "list", "data": [entry]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if self.hang_s:
            await asyncio.sleep(self.hang_s)
        if self.fail_status is not None and self.fail_calls != 0:
            if self.fail_calls is not None:
                self.fail_calls -= 1
            error = {"message": "engine exploded", "type": "InternalServerError", "param": None, "code": self.fail_status}
            return web.json_response({"error": error}, status=self.fail_status)
        if self.tool_calls is not None:
            return await self._tool_calls(request, body)
        if body.get("stream"):
            return await self._stream(request, body)
        return web.json_response(_completion(body, self._id()))

    async def _tool_calls(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        calls = [{"id": f"call_{i}", "type": "function", "function": dict(c)} for i, c in enumerate(self.tool_calls or ())]
        if not body.get("stream"):
            completion = _completion(body, self._id())
            choice = completion["choices"][0]
            choice["message"] |= {"content": None, "tool_calls": calls}
            choice["finish_reason"] = "tool_calls"
            return web.json_response(completion)
        out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        head = _head(body, "chat.completion.chunk", self._id())
        first = {"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}
        extra = {"prompt_token_ids": FAKE_PROMPT_IDS} if body.get("return_token_ids") else {}
        chunks = [{**head, "choices": [first], **extra}]
        for index, call in enumerate(calls):  # vLLM's shape: the name first, the arguments in pieces
            arguments = call["function"]["arguments"]
            opening = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
            chunks.append({**head, "choices": [{"index": 0, "delta": {"tool_calls": [opening]}, "finish_reason": None}]})
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                chunks.append({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        for chunk in chunks:
            await out.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await out.write(b"data: [DONE]\n\n")
        await out.write_eof()
        return out

    def _id(self) -> str:
        # One id per answer, as vLLM's: Responses ids (resp_ + this) must tell answers apart.
        return f"chatcmpl-fake{len(self.requests)}"

    async def _stream(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        for position, chunk in enumerate(_chunks(body, self._id())):
            await out.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
            if position == 1 and self.cut_stream:
                request.transport.close()
                return out
            if position == 1 and self.gate is not None:
                try:
                    await asyncio.wait_for(self.gate.wait(), 10)
                    self.released_by_gate = True
                except asyncio.TimeoutError:
                    self.released_by_gate = False
            if position == len(FAKE_TOKENS) and self.end_gate is not None:
                self.at_end.set()
                await asyncio.wait_for(self.end_gate.wait(), 10)
        await out.write(b"data: [DONE]\n\n")
        await out.write_eof()
        return out


def _logprob(text: str, logprob: float) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []}


def _head(body: dict[str, Any], kind: str, completion_id: str) -> dict[str, Any]:
    return {"id": completion_id, "object": kind, "created": 1700000000, "model": body.get("model")}


def _completion(body: dict[str, Any], completion_id: str) -> dict[str, Any]:
    logprobs = {"content": [_logprob(t, lp) for t, _, lp in FAKE_TOKENS]} if body.get("logprobs") else None
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": FAKE_TEXT, "tool_calls": []},
        "logprobs": logprobs,
        "finish_reason": "stop",
        "stop_reason": None,
    }
    if body.get("return_token_ids"):
        choice["token_ids"] = [i for _, i, _ in FAKE_TOKENS]
    response = {**_head(body, "chat.completion", completion_id), "choices": [choice]}
    response["usage"] = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    if body.get("return_token_ids"):
        response["prompt_token_ids"] = FAKE_PROMPT_IDS
    return response


def _chunks(body: dict[str, Any], completion_id: str) -> Iterator[dict[str, Any]]:
    first = {**_head(body, "chat.completion.chunk", completion_id)}
    first["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]
    if body.get("return_token_ids"):
        first["prompt_token_ids"] = FAKE_PROMPT_IDS
    yield first
    for position, (text, token_id, logprob) in enumerate(FAKE_TOKENS):
        last = position == len(FAKE_TOKENS) - 1
        choice: dict[str, Any] = {
            "index": 0,
            "delta": {"content": text},
            "logprobs": {"content": [_logprob(text, logprob)]} if body.get("logprobs") else None,
            "finish_reason": "stop" if last else None,
        }
        if last:
            choice["stop_reason"] = None  # vLLM sets it (often null) on the finishing chunk only
        if body.get("return_token_ids"):
            choice["token_ids"] = [token_id]
        yield {**_head(body, "chat.completion.chunk", completion_id), "choices": [choice]}
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        yield {**_head(body, "chat.completion.chunk", completion_id), "choices": [], "usage": usage}


@pytest.fixture(scope="session")
def loop_thread() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


@pytest.fixture
def fake_engine(loop_thread: LoopThread) -> Iterator[FakeEngine]:
    engine = FakeEngine()
    runner, engine.url = loop_thread.run(_serve(engine.app()))
    yield engine
    loop_thread.run(runner.cleanup())


@pytest.fixture
def make_proxy(loop_thread: LoopThread, tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start a proxy in the background loop; returns its URL. Records go to ``tmp_path/'out'``."""
    running = []

    def make(upstream: str, **settings: Any) -> str:
        config = ProxyConfig(upstream=upstream, out=settings.pop("out", tmp_path / "out"), port=0, **settings)
        proxy = loop_thread.run(start_proxy(config))
        running.append(proxy)
        return proxy.url

    yield make
    for proxy in running:
        loop_thread.run(proxy.stop())


@pytest.fixture
def fake_proxy(fake_engine: FakeEngine, make_proxy: Callable[..., str]) -> str:
    """A proxy in front of the fake engine, default settings."""
    return make_proxy(fake_engine.url)


@pytest.fixture
def capturing_engine(
    fake_engine: FakeEngine, loop_thread: LoopThread
) -> Iterator[tuple[FakeEngine, str, list[dict[str, str]]]]:
    """The fake engine behind a middleware that keeps every request's headers: (engine, url, headers seen)."""
    seen: list[dict[str, str]] = []

    @web.middleware
    async def capture(request: web.Request, handler: Any) -> web.StreamResponse:
        seen.append(dict(request.headers))
        return await handler(request)

    app = web.Application(middlewares=[capture])
    app.router.add_get("/v1/models", fake_engine._models)
    app.router.add_post("/v1/chat/completions", fake_engine._chat)
    runner, url = loop_thread.run(_serve(app))
    yield fake_engine, url, seen
    loop_thread.run(runner.cleanup())


# The tool round trip the harness-API tests play (Anthropic Messages, OpenAI Responses): the
# first assistant turn writes a file, the second answers; later turns generate freely.
TOOL_SCRIPT = {
    "turns": [
        {"content": "", "tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hello"}}]},
        {"content": "Wrote notes.txt."},
    ]
}


@pytest.fixture(scope="session")
def tool_script_engine(make_dev_engine: Callable[..., Any]) -> Any:
    """A dev engine playing TOOL_SCRIPT (one per test session: an engine start costs seconds)."""
    return make_dev_engine(script=TOOL_SCRIPT)


@pytest.fixture(scope="session")
def decode_completion(tiny_model_dir: Path) -> Callable[[Any], str]:
    """The text of a recorded call's completion tokens, its end-of-turn token left out."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)

    def decode(call: Any) -> str:
        return tokenizer.decode(call.completion_token_ids, skip_special_tokens=False).removesuffix("<|im_end|>")

    return decode
