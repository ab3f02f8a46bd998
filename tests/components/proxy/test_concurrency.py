"""Many rollouts at once: every session file holds exactly its own calls, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from components.core import read_session

SESSIONS = 64
CALLS_PER_SESSION = 4


async def _rollout(http: aiohttp.ClientSession, proxy: str, session: str) -> None:
    for turn in range(CALLS_PER_SESSION):
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": f"{session} turn {turn}"}],
            "stream": turn % 2 == 1,
        }
        async with http.post(f"{proxy}/s/{session}/v1/chat/completions", json=body) as response:
            assert response.status == 200, await response.text()
            await response.read()


async def _run_all(proxy: str) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=SESSIONS)) as http:
        await asyncio.gather(*(_rollout(http, proxy, f"rollout-{i}") for i in range(SESSIONS)))


def test_concurrent_sessions_each_get_exactly_their_calls_in_order(fake_proxy: str, loop_thread, tmp_path: Path) -> None:
    loop_thread.run(_run_all(fake_proxy), timeout=60)
    files = sorted((tmp_path / "out").glob("*.jsonl"))
    assert len(files) == SESSIONS
    for path in files:
        calls = read_session(path)  # also checks call_index runs 0..n-1
        assert [call.request["messages"][0]["content"] for call in calls] == [
            f"{path.stem} turn {turn}" for turn in range(CALLS_PER_SESSION)
        ]
        assert [call.stream for call in calls] == [turn % 2 == 1 for turn in range(CALLS_PER_SESSION)]
        assert all(call.ok and call.session_id == path.stem for call in calls)
