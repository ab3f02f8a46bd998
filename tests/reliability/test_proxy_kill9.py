"""kill -9 the proxy under load, restart it on the same output directory, again and again.

The durability contract (components/proxy/calls.py): a call is on disk before its client
sees its end. Here 32 clients keep mixed streamed and plain chat calls in flight through
a proxy subprocess in front of an engine that streams slowly, so that each SIGKILL cuts
streams in the middle; after every round the proxy restarts on the same ``--out``.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson

from components.core.services import Service
from tests.reliability._faults import (
    FULL_COMPLETION,
    BackgroundServer,
    kill_9,
    marker_of,
    read_out_dir,
    slow_upstream,
    start_proxy_process,
)

CLIENTS = 32
ROUNDS = 5
SEED = 20261130  # the kill moments are random but the same on every run
CHUNK_DELAY_S = 0.04  # ~10 events per stream: a stream lasts ~0.4 s, so every kill finds some mid-way
ANSWER_DELAY_S = 0.25


@dataclass
class Seen:
    """One call as its client saw it."""

    session: str
    marker: str
    stream: bool
    complete: bool  # 200 and the whole answer: the JSON completion, or the stream up to [DONE]
    partial: bool  # some of a stream arrived, then the connection died: a kill landed mid-stream


@dataclass
class _Load:
    url: str = ""
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    seen: list[Seen] = field(default_factory=list)
    statuses: set[int | None] = field(default_factory=set)


async def _client(load: _Load, http: aiohttp.ClientSession, index: int) -> None:
    session = f"c{index:02d}"
    rng = random.Random(SEED + index)
    await asyncio.sleep(rng.uniform(0, 0.3))  # clients out of step from the start
    for n in range(10**6):
        if load.stop.is_set():
            return
        stream = (index + n) % 2 == 0
        marker = f"{session}-call-{n}"
        body = {"model": "m", "messages": [{"role": "user", "content": marker}], "stream": stream, "max_tokens": 8}
        received, status = b"", None
        try:
            async with http.post(f"{load.url}/s/{session}/v1/chat/completions", json=body) as resp:
                status = resp.status
                if stream:
                    async for data in resp.content.iter_any():
                        received += data
                else:
                    received = await resp.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError):
            status = None
        load.statuses.add(status)
        complete = status == 200 and (
            received.endswith(b"data: [DONE]\n\n") if stream else _is_completion(received)
        )
        load.seen.append(Seen(session, marker, stream, complete, partial=stream and bool(received) and not complete))
        if not complete:
            await asyncio.sleep(rng.uniform(0.02, 0.2))  # the proxy is down or restarting: try again shortly


def _is_completion(data: bytes) -> bool:
    try:
        return bool(orjson.loads(data)["choices"][0]["message"]["content"])
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return False


async def _run(upstream: str, out: Path, logs: Path) -> tuple[_Load, int]:
    rng = random.Random(SEED)
    load = _Load()
    proxy: Service = await asyncio.to_thread(start_proxy_process, upstream, out, logs)
    load.url = proxy.url
    kills = 0
    timeout = aiohttp.ClientTimeout(total=20)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as http:
        clients = [asyncio.create_task(_client(load, http, i)) for i in range(CLIENTS)]
        try:
            for _ in range(ROUNDS):
                await asyncio.sleep(rng.uniform(0.5, 1.3))  # a moment unrelated to any call's phase
                await asyncio.to_thread(kill_9, proxy)
                kills += 1
                proxy = await asyncio.to_thread(start_proxy_process, upstream, out, logs)
                load.url = proxy.url
            await asyncio.sleep(1.0)  # the last proxy serves a while unharmed
        finally:
            load.stop.set()
            await asyncio.gather(*clients, return_exceptions=True)
            await asyncio.to_thread(proxy.stop)
    return load, kills


def test_kill_9_under_load_loses_no_completed_call_and_records_no_cut_one_as_complete(tmp_path: Path) -> None:
    t0 = time.monotonic()
    upstream = BackgroundServer(slow_upstream(CHUNK_DELAY_S, ANSWER_DELAY_S))
    try:
        load, kills = asyncio.run(_run(upstream.url, tmp_path / "out", tmp_path / "logs"))
    finally:
        upstream.close()

    # The faults happened, and under load: otherwise the assertions below prove nothing.
    completed = [s for s in load.seen if s.complete]
    cut = [s for s in load.seen if not s.complete]
    assert kills == ROUNDS
    assert len(completed) >= 10 * CLIENTS, f"only {len(completed)} calls completed"
    assert sum(s.partial for s in cut) >= ROUNDS, "no kill landed in the middle of a stream"
    assert load.statuses <= {200, None}, f"the proxy answered other statuses: {load.statuses}"

    sessions = read_out_dir(tmp_path / "out")  # every file parses, call_index contiguous from 0 across restarts
    records = {}
    for session_id, calls in sessions.items():
        for call in calls:
            marker = marker_of(call)
            assert marker not in records, f"{marker} recorded twice"
            assert call.session_id == session_id and marker.startswith(session_id + "-")
            records[marker] = call
            # A record that says ok holds the engine's whole answer: nothing cut short passes as complete.
            if call.ok:
                assert call.completion_token_ids == FULL_COMPLETION and call.finish_reason == "stop", marker
    assert set(records) <= {s.marker for s in load.seen}

    missing = [s.marker for s in completed if s.marker not in records]
    assert not missing, f"{len(missing)} calls completed for their client but are not on disk: {missing[:5]}"
    not_ok = [(s.marker, records[s.marker].error) for s in completed if not records[s.marker].ok]
    assert not not_ok, f"calls completed for their client but recorded as failed: {not_ok[:5]}"
    assert all(records[s.marker].stream == s.stream for s in completed)

    # A cut call is absent (the proxy died before its end) or, with error set, a failure.
    # One case is allowed ok: the engine had finished and the proxy had written the record
    # (record before answer, the contract's order) when the kill took the answer's last
    # bytes. Its record then holds the whole answer, which the loop above checked.
    written_unseen = [s for s in cut if s.marker in records and records[s.marker].ok]
    for s in cut:
        call = records.get(s.marker)
        assert call is None or call.error is not None or call.ok, s
    elapsed = time.monotonic() - t0
    print(
        f"{kills} kills, {len(load.seen)} calls: {len(completed)} completed (all on disk), {len(cut)} cut "
        f"({sum(s.partial for s in cut)} mid-stream, {len(written_unseen)} recorded before the kill took "
        f"their last bytes), {len(records)} records in {len(sessions)} sessions, {elapsed:.1f} s"
    )
