"""A scripted fake OpenAI server that can stand in for the recording proxy.

It answers chat completions from a list of turns (the turn played is the number of
assistant messages already in the request, so an agent loop walks through them), and,
like the recording proxy, serves ``/health``, ``POST /flush`` and writes one valid
``RecordedCall`` line per call to ``<record_dir>/<session_id>.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from components.core.trajectory import RecordedCall
from components.engine.cut_route import PROXY_CUT_ROUTE


@dataclass
class Turn:
    """One scripted assistant turn: text, and tool calls as (name, arguments JSON text)."""

    content: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)

    def message(self, turn_index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{turn_index}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                for i, (name, args) in enumerate(self.tool_calls)
            ]
        return message


def shell_call(command: str) -> Turn:
    return Turn(tool_calls=[("shell", json.dumps({"command": command}))])


@dataclass
class FakeOpenAI:
    turns: list[Turn]
    record_dir: Path | None = None
    fail_status: int | None = None  # answer every chat call with this HTTP error
    fail_calls: int | None = None  # with fail_status: only this many chat calls fail, then it recovers
    fail_message: str = "scripted failure"
    delay_s: float = 0.0  # wait this long before answering a chat call
    cut_reason: str | None = None  # the straggler cut the proxy relays (GET /cut), once set
    cut_asks: int = 0
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)  # session id of each call ("" without /s/<id>/)
    attempts: list[int] = field(default_factory=list)  # the runner's attempt of each call (0 without /a/<k>/)
    flushes: list[str] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)

    def base_url(self, session: str | None = None) -> str:
        return f"{self.url}/s/{session}/v1" if session else f"{self.url}/v1"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/s/{session}/v1/chat/completions", self._chat)
        app.router.add_post("/s/{session}/a/{attempt}/v1/chat/completions", self._chat)
        app.router.add_get("/health", self._health)
        app.router.add_post("/flush", self._flush)
        app.router.add_get(PROXY_CUT_ROUTE, self._cut)
        return app

    async def _cut(self, request: web.Request) -> web.Response:
        self.cut_asks += 1
        return web.json_response({"cut": self.cut_reason is not None, "reason": self.cut_reason})

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _flush(self, request: web.Request) -> web.Response:
        session = request.query.get("session", "")
        self.flushes.append(session)
        return web.json_response({"sessions": {session: self._counts.get(session, 0)}})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        session = request.match_info.get("session", "")
        self.requests.append(body)
        self.sessions.append(session)
        await asyncio.sleep(self.delay_s)
        attempt = int(request.match_info.get("attempt", 0))
        self.attempts.append(attempt)
        if self.fail_status is not None and self.fail_calls != 0:
            if self.fail_calls is not None:
                self.fail_calls -= 1
            error = {"message": self.fail_message, "type": "server_error", "param": None, "code": None}
            if self.record_dir is not None and session:
                self._record(session, body, None, status=self.fail_status, attempt=attempt)
            return web.json_response({"error": error}, status=self.fail_status)
        index = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        turn = self.turns[min(index, len(self.turns) - 1)]
        response = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": turn.message(index),
                    "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
        if self.record_dir is not None and session:
            self._record(session, body, response, attempt=attempt)
        return web.json_response(response)

    def _record(
        self, session: str, body: dict[str, Any], response: dict[str, Any] | None, status: int = 200, attempt: int = 0
    ) -> None:
        call_index = self._counts.get(session, 0)
        ok = status == 200
        call = RecordedCall(
            session_id=session,
            call_index=call_index,
            api="chat.completions",
            request=body,
            response=response,
            prompt_token_ids=[1, 2, 3] if ok else [],
            completion_token_ids=[4] if ok else [],
            completion_logprobs=[-0.5] if ok else [],
            started_at=time.time(),
            latency_ms=0.0,
            upstream_status=status,
            error=None if ok else f"upstream answered HTTP {status}: {self.fail_message}",
            tags={"attempt": attempt} if attempt else {},
        )
        with (self.record_dir / f"{session}.jsonl").open("a") as fh:
            fh.write(call.model_dump_json() + "\n")
        self._counts[session] = call_index + 1


class LoopThread:
    """An asyncio loop in a daemon thread, so plain tests can run servers beside subprocesses."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
