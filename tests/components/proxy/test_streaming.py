"""Streams are relayed event by event, and a completed stream is already on disk."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from unittest import mock

import httpx
import pytest
from aiohttp.http_writer import StreamWriter
from aiohttp.test_utils import make_mocked_request

from components.core import read_session
from components.proxy.calls import _EventStream
from components.proxy.recorder import Recorder
from tests.components.proxy.conftest import FAKE_TOKENS


def test_stream_is_forwarded_before_the_upstream_finishes(fake_proxy: str, fake_engine, loop_thread, tmp_path: Path) -> None:
    fake_engine.gate = asyncio.Event()  # the engine pauses after its first token until the test sets this
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    seen: list[str] = []
    with httpx.stream("POST", f"{fake_proxy}/s/s1/v1/chat/completions", json=body, timeout=30) as response:
        for line in response.iter_lines():
            seen.append(line)
            if '"Hel"' in line:
                # Only a proxy that forwards as it goes lets us see this while the engine still waits.
                loop_thread.call_soon(fake_engine.gate.set)
    assert fake_engine.released_by_gate is True, "the first chunk reached the client only after the engine gave up waiting"
    assert seen[-2:] == ["data: [DONE]", ""] or seen[-1] == "data: [DONE]"
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.ok and call.stream


@pytest.mark.parametrize(("stream", "completion_signal"), [(True, "data: [DONE]"), (False, '"object":"chat.completion"')])
def test_record_is_written_before_the_client_sees_the_call_complete(
    fake_proxy: str, monkeypatch, tmp_path: Path, stream: bool, completion_signal: str
) -> None:
    writing, proceed = threading.Event(), threading.Event()
    original_write = Recorder.write

    def paused_write(self, session_id, record):  # runs on the proxy's loop thread
        writing.set()
        proceed.wait(10)
        return original_write(self, session_id, record)

    monkeypatch.setattr(Recorder, "write", paused_write)
    lines: list[str] = []
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}

    def read_stream() -> None:
        with httpx.stream("POST", f"{fake_proxy}/s/s1/v1/chat/completions", json=body, timeout=30) as response:
            lines.extend(response.iter_lines())

    reader = threading.Thread(target=read_stream)
    reader.start()
    assert writing.wait(10), "the proxy never recorded the call"
    # While the record is being written, an ending sent earlier would already be readable.
    time.sleep(0.2)
    completed_before_record = any(completion_signal in line for line in lines)
    proceed.set()
    reader.join(10)
    assert not completed_before_record, "the client saw the call complete before it was recorded"
    assert any(completion_signal in line for line in lines)
    assert len(read_session(tmp_path / "out" / "s1.jsonl")) == 1


def test_the_finishing_chunk_reaches_the_client_only_once_recorded(fake_proxy: str, fake_engine, loop_thread, tmp_path: Path) -> None:
    # A harness may take the finish reason as the end of its call: it must already be on disk.
    fake_engine.end_gate = asyncio.Event()  # the engine pauses after its finishing chunk until set
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    lines: list[str] = []

    def read_stream() -> None:
        with httpx.stream("POST", f"{fake_proxy}/s/s1/v1/chat/completions", json=body, timeout=30) as response:
            lines.extend(response.iter_lines())

    reader = threading.Thread(target=read_stream)
    reader.start()
    assert fake_engine.at_end.wait(10), "the engine never sent its finishing chunk"
    time.sleep(0.3)  # a finishing chunk forwarded at once would be readable by now
    seen_while_paused = list(lines)
    loop_thread.call_soon(fake_engine.end_gate.set)
    reader.join(10)
    assert not any('"finish_reason":"stop"' in line for line in seen_while_paused), "finish reason sent before the record"
    assert any('"finish_reason":"stop"' in line for line in lines) and lines[-2:] == ["data: [DONE]", ""]
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.ok and call.completion_token_ids == [i for _, i, _ in FAKE_TOKENS]


def test_client_leaving_mid_stream_is_recorded_and_proxy_keeps_serving(fake_proxy: str, fake_engine, loop_thread, tmp_path: Path) -> None:
    fake_engine.gate = asyncio.Event()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream("POST", f"{fake_proxy}/s/gone/v1/chat/completions", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if '"Hel"' in line:
                break  # leave while the engine is paused
    loop_thread.call_soon(fake_engine.gate.set)
    fake_engine.gate = None
    httpx.post(f"{fake_proxy}/s/s1/v1/chat/completions", json={**body, "stream": False}).raise_for_status()
    # The abandoned call is recorded as failed once the proxy notices the client is gone.
    httpx.post(f"{fake_proxy}/flush").raise_for_status()
    for _ in range(100):
        if (tmp_path / "out" / "gone.jsonl").exists():
            break
        loop_thread.run(asyncio.sleep(0.05))
    [abandoned] = read_session(tmp_path / "out" / "gone.jsonl")
    assert not abandoned.ok and "client disconnected" in abandoned.error


def test_stream_headers_leave_with_the_first_events_in_one_send() -> None:
    # Headers sent alone cost a send, and the harness a wake-up, before any event.
    async def sends_until_first_event() -> tuple[int, list[bytes]]:
        transport = mock.Mock()
        transport.is_closing.return_value = False
        protocol = mock.Mock(transport=transport)
        writer = StreamWriter(protocol, asyncio.get_running_loop())
        request = make_mocked_request("POST", "/v1/chat/completions", writer=writer, transport=transport, protocol=protocol)
        out = _EventStream(status=200, headers={"Content-Type": "text/event-stream"})
        await out.prepare(request)
        sent_at_prepare = transport.write.call_count + transport.writelines.call_count
        await out.write(b"data: {}\n\n")
        return sent_at_prepare, [call.args[0] for call in transport.write.call_args_list]

    sent_at_prepare, sends = asyncio.run(sends_until_first_event())
    assert sent_at_prepare == 0
    [first] = sends
    assert first.startswith(b"HTTP/1.1 200") and first.endswith(b"data: {}\n\n\r\n")
