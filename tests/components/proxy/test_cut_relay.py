"""The proxy relays the serve step's straggler cut to its rollout's runner (GET /cut)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from tests._servers import unshared_port
from components.engine.cut_route import CUT_ROUTE, PROXY_CUT_ROUTE, read_cut_file
from components.rollout._cut import CutPoll
from tests.components.proxy.conftest import FakeEngine, LoopThread, _serve


@pytest.fixture
def cut_engine(loop_thread: LoopThread, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The fake engine with the dev engine's cut route over a state file: (url, state file)."""
    state = tmp_path / "cut.json"
    engine = FakeEngine()
    app = engine.app()

    async def cut(_request: web.Request) -> web.Response:
        return web.Response(body=read_cut_file(state), content_type="application/json")

    app.router.add_get(CUT_ROUTE, cut)
    runner, url = loop_thread.run(_serve(app))
    yield url, state
    loop_thread.run(runner.cleanup())


def test_the_runner_learns_the_cut_through_its_proxy(cut_engine: tuple[str, Path], make_proxy: Callable[..., str]) -> None:
    url, state = cut_engine
    proxy = make_proxy(url)
    poll = CutPoll(proxy, every_s=0)
    assert poll.reason() is None
    state.write_text(json.dumps({"cut": True, "reason": "3 of 4 ended"}))
    assert poll.reason() == "3 of 4 ended"
    state.unlink()
    assert poll.reason() == "3 of 4 ended", "a cut is never taken back"


def test_an_engine_without_the_route_never_cuts(fake_proxy: str) -> None:
    answer = httpx.get(fake_proxy + PROXY_CUT_ROUTE)
    assert answer.status_code == 200 and answer.json()["cut"] is False
    assert "HTTP 404" in answer.json()["error"]
    assert CutPoll(fake_proxy, every_s=0).reason() is None


def test_an_unreachable_engine_or_proxy_never_cuts(make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(f"http://127.0.0.1:{unshared_port()}")
    answer = httpx.get(proxy + PROXY_CUT_ROUTE)
    assert answer.status_code == 502 and answer.json()["cut"] is False
    assert CutPoll(proxy, every_s=0).reason() is None
    assert CutPoll(f"http://127.0.0.1:{unshared_port()}", every_s=0).reason() is None


def test_the_poll_asks_at_most_once_per_period(cut_engine: tuple[str, Path], make_proxy: Callable[..., str]) -> None:
    url, state = cut_engine
    poll = CutPoll(make_proxy(url), every_s=3600)
    assert poll.reason() is None
    state.write_text(json.dumps({"cut": True, "reason": "r"}))
    assert poll.reason() is None, "the answer is cached for the period: the runner checks every 0.1 s"
