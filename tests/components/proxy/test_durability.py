"""A proxy killed with SIGKILL loses none of the calls it completed, and resumes numbering."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from components.core import read_session
from components.core.services import Service
from tests._servers import start_proxy_process as _start

COMPLETED = 5


def _call(proxy: Service, stream: bool) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    with httpx.stream("POST", f"{proxy.url}/s/run/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        response.read()


def test_kill_9_keeps_every_completed_call_and_restart_continues_the_index(fake_engine, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proxy = _start(fake_engine.url, out, tmp_path / "logs")
    try:
        for position in range(COMPLETED):
            _call(proxy, stream=position % 2 == 0)
        os.killpg(proxy.process.pid, signal.SIGKILL)  # no shutdown hook, no flush: only what write() put in the page cache
        proxy.process.wait(10)
    finally:
        proxy.stop()
    calls = read_session(out / "run.jsonl")
    assert len(calls) == COMPLETED and all(call.ok for call in calls)

    restarted = _start(fake_engine.url, out, tmp_path / "logs")
    try:
        _call(restarted, stream=False)
    finally:
        restarted.stop()
    assert [call.call_index for call in read_session(out / "run.jsonl")] == list(range(COMPLETED + 1))
