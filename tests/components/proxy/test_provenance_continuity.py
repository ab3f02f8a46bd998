"""Prefix continuity of harness-shaped sessions through the proxy and the scripted dev engine.

The sessions (``benchmarks/continuity/shapes.py``) are shaped like Claude Code (Messages,
streamed), Codex (Responses, streamed, items echoed) and mini-swe-agent (chat, not
streamed); the policy writes text before some tool calls, once sampled by the model
itself. Re-rendering those answers breaks the trainer's rows; with token provenance
every call after the first continues its row, and the prompt ids recorded are the ones
the engine was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from benchmarks.continuity.measure import read_continuity
from benchmarks.continuity.shapes import SCRIPT, SHAPES
from components.core import read_session

ACCEPTANCE_SHAPES = ["claude-code", "codex", "mini-swe-agent"]


@pytest.fixture(scope="module")
def continuity_engine(make_dev_engine: Callable[..., Any]) -> Any:
    return make_dev_engine(script=SCRIPT)


class _Spy:
    """Passes every request on to the engine and keeps the token prompts of text completions."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.prompts: list[list[int]] = []
        self.http: aiohttp.ClientSession | None = None

    async def forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path == "/v1/completions":
            self.prompts.append(orjson.loads(body)["prompt"])
        if self.http is None:
            self.http = aiohttp.ClientSession()
        async with self.http.request(request.method, self.target + request.path_qs, data=body,
                                     headers={"Content-Type": "application/json"}) as upstream:  # fmt: skip
            out = web.StreamResponse(status=upstream.status, headers={"Content-Type": upstream.content_type})
            await out.prepare(request)
            async for data in upstream.content.iter_any():
                await out.write(data)
            await out.write_eof()
            return out


@pytest.fixture
def spy(continuity_engine: Any, loop_thread: Any) -> Iterator[_Spy]:
    spy = _Spy(continuity_engine.url)
    app = web.Application(client_max_size=2**26)
    app.router.add_route("*", "/{tail:.*}", spy.forward)
    runner = web.AppRunner(app, access_log=None)

    async def start() -> str:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}"

    spy.url = loop_thread.run(start())  # type: ignore[attr-defined]
    yield spy

    async def stop() -> None:
        if spy.http is not None:
            await spy.http.close()
        await runner.cleanup()

    loop_thread.run(stop())


def _session(
    shape: str, upstream: str, out: Path, make_proxy: Callable[..., str], loop_thread: Any, **settings: Any
) -> None:
    proxy = make_proxy(upstream, out=out, training=True, **settings)
    loop_thread.run(SHAPES[shape](proxy, shape, 8), timeout=180)


@pytest.mark.parametrize("shape", ACCEPTANCE_SHAPES)
def test_with_token_provenance_every_call_continues_its_row_with_the_ids_the_engine_saw(
    shape: str, spy: _Spy, make_proxy: Callable[..., str], loop_thread: Any, tmp_path: Path
) -> None:
    _session(shape, spy.url, tmp_path / "on", make_proxy, loop_thread)  # type: ignore[attr-defined]
    on = read_continuity(shape, True, tmp_path / "on")
    assert on.sessions == 1 and on.continued >= 3
    assert (on.share, on.broken) == (1.0, 0), on
    assert on.token_path == on.calls - 1, on.chat_reasons  # all but the first turn
    calls = read_session(tmp_path / "on" / f"{shape}.jsonl")
    token_calls = [call for call in calls if call.provenance.path == "tokens"]
    assert [call.prompt_token_ids for call in token_calls] == spy.prompts  # what the engine was sent
    for before, call in zip(calls, calls[1:]):
        assert call.provenance.continues_call == before.call_index
        row = before.prompt_token_ids + before.completion_token_ids
        assert call.prompt_token_ids[: len(row)] == row


@pytest.mark.parametrize("shape", ACCEPTANCE_SHAPES)
def test_without_token_provenance_re_rendered_answers_break_rows(
    shape: str, continuity_engine: Any, make_proxy: Callable[..., str], loop_thread: Any, tmp_path: Path
) -> None:
    _session(shape, continuity_engine.url, tmp_path / "off", make_proxy, loop_thread, token_provenance=False)
    off = read_continuity(shape, False, tmp_path / "off")
    # Both answers with text before their tool call come back re-rendered ("text\n" then the
    # template's own "\n" before <tool_call>), the first one's sampled text re-encoded too.
    assert off.broken >= 2 and off.share < 1.0, off
    assert off.token_path == 0 and not off.chat_reasons  # provenance off: no provenance in the records


def test_a_call_holding_an_image_takes_the_chat_path_saying_why() -> None:
    from components.proxy.provenance._completions import chat_only

    look = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
                         {"role": "user", "content": [{"type": "text", "text": "and now?"}, look]}]}  # fmt: skip
    assert "token ids carry no pixels" in chat_only(chat)
    assert chat_only({"messages": [{"role": "user", "content": [{"type": "text", "text": "no image"}]}]}) is None
