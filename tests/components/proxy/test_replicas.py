"""Engine replicas behind one proxy: each session's calls go to one replica (its prefix cache),
sessions spread over all of them, and a replica that dies costs its sessions one resent call."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import httpx
import pytest
from aiohttp import web

from components.core import read_session
from components.proxy.config import ProxyConfig
from components.proxy.upstream import REPLICA_TAG, pinned_replica
from tests.components.proxy.conftest import FakeEngine, LoopThread, _serve

GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
SESSIONS = [f"task-s{i}" for i in range(12)]


@pytest.fixture
def two_engines(loop_thread: LoopThread):
    engines, runners = [FakeEngine(), FakeEngine()], []
    for engine in engines:
        runner, engine.url = loop_thread.run(_serve(engine.app()))
        runners.append(runner)
    yield engines, runners
    for runner in runners:
        loop_thread.run(runner.cleanup())


def _call(proxy: str, session: str) -> httpx.Response:
    return httpx.post(f"{proxy}/s/{session}/v1/chat/completions", json=GOOD, timeout=30)


def test_each_session_stays_on_one_replica_and_sessions_spread_over_both(
    two_engines, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    (first, second), _ = two_engines
    proxy = make_proxy(f"{first.url},{second.url.removeprefix('http://')}")
    for _ in range(3):  # three turns per session
        for session in SESSIONS:
            assert _call(proxy, session).status_code == 200
    calls = {session: read_session(tmp_path / "out" / f"{session}.jsonl") for session in SESSIONS}
    for session, records in calls.items():
        replicas = {r.tags[REPLICA_TAG] for r in records}
        assert replicas == {pinned_replica(session, 2)}, f"{session} reached replicas {replicas}"
    assert len(first.requests) + len(second.requests) == 3 * len(SESSIONS)
    assert first.requests and second.requests, "every session landed on one replica"
    assert len(first.requests) == 3 * sum(pinned_replica(s, 2) == 0 for s in SESSIONS)


def test_a_dead_replica_costs_its_sessions_one_resent_call(
    two_engines, make_proxy: Callable[..., str], loop_thread: LoopThread, tmp_path: Path
) -> None:
    (first, second), (first_runner, _) = two_engines
    proxy = make_proxy(f"{first.url},{second.url}", upstream_retries=2)
    for session in SESSIONS:
        assert _call(proxy, session).status_code == 200
    loop_thread.run(first_runner.cleanup())  # replica 0 dies mid-iteration
    on_first = [s for s in SESSIONS if pinned_replica(s, 2) == 0]
    assert on_first, "no session was pinned to the replica that died"
    for _ in range(2):
        for session in SESSIONS:
            assert _call(proxy, session).status_code == 200, session
    resent = {}
    for session in SESSIONS:
        first_call, *later = read_session(tmp_path / "out" / f"{session}.jsonl")
        assert all(r.ok and r.tags[REPLICA_TAG] == 1 for r in later)
        resent[session] = [r.tags.get("upstream_attempts", 1) for r in later]
    # The first call to find replica 0 dead was sent again, to replica 1; the replica was then set
    # aside, so every later call of its sessions went to replica 1 directly. No call failed.
    assert resent[on_first[0]] == [2, 1]
    assert all(attempts == [1, 1] for session, attempts in resent.items() if session != on_first[0]), resent


def test_replica_addresses_are_checked_and_need_one_socket_each() -> None:
    config = ProxyConfig(upstream="http://10.0.0.1:8000/v1,10.0.0.2:8000", out=Path("out"))
    assert config.upstreams == ("http://10.0.0.1:8000", "http://10.0.0.2:8000")
    with pytest.raises(ValueError, match="1 upstream socket\\(s\\) for 2 upstream replica\\(s\\)"):
        ProxyConfig(upstream="http://a:1,b:2", out=Path("out"), upstream_socket="/run/one.sock")
    with pytest.raises(ValueError, match="not an http:// or https:// address"):
        ProxyConfig(upstream="http://a:1,", out=Path("out"))
