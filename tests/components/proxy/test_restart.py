"""A proxy killed mid-session and started again on the same folder continues the session.

What it kept in memory (the token ids of its answers, the digests of recent requests) is
read back from the session file, so the next call takes the token path and continues the
row, and a retry of a call from before the kill is still tagged as one. A session file
whose last line a kill tore is repaired at start and the repair reported.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx

from components.core import read_session
from components.core.services import Service
from components.proxy.recorder import TORN_DIR
from tests._servers import start_proxy_process

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}


def _chat(proxy: Service, messages: list[dict[str, Any]], *, stream: bool = False) -> dict[str, Any]:
    body = {"model": "m", "messages": messages, "tools": [WRITE_TOOL], "max_tokens": 64, "stream": stream}
    response = httpx.post(f"{proxy.url}/s/run/v1/chat/completions", json=body, timeout=120)
    assert response.status_code == 200, response.text
    if stream:
        return {}
    return response.json()["choices"][0]["message"]


def _kill(proxy: Service) -> None:
    os.killpg(proxy.process.pid, signal.SIGKILL)  # no shutdown hook: only what the session file holds survives
    proxy.process.wait(10)
    proxy.stop()


def _health(proxy: Service) -> dict[str, Any]:
    return httpx.get(f"{proxy.url}/health", timeout=10).json()


def test_a_restarted_proxy_continues_the_row_and_the_retry_tags(tool_script_engine, tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "logs"
    proxy = start_proxy_process(tool_script_engine.url, out, logs, "--training")
    try:
        history = [{"role": "user", "content": "Write hello to notes.txt."}]
        tool_turn = _chat(proxy, history)
        history += [
            {"role": "assistant", "content": tool_turn["content"], "tool_calls": tool_turn["tool_calls"]},
            {"role": "tool", "tool_call_id": tool_turn["tool_calls"][0]["id"], "content": "ok"},
        ]
        second_request = list(history)
        answer = _chat(proxy, second_request)
    finally:
        _kill(proxy)
    before = read_session(out / "run.jsonl")
    assert [call.provenance.path for call in before] == ["chat", "tokens"]

    restarted = start_proxy_process(tool_script_engine.url, out, logs, "--training")
    try:
        history += [{"role": "assistant", "content": answer["content"]}, {"role": "user", "content": "Thanks."}]
        _chat(restarted, history, stream=True)
        _chat(restarted, second_request)  # the harness retries a call from before the kill
        health = _health(restarted)
    finally:
        restarted.stop()

    calls = read_session(out / "run.jsonl")
    previous, continued, retry = calls[1], calls[2], calls[3]
    assert continued.ok and continued.provenance.path == "tokens", continued.provenance
    assert continued.provenance.continues_call == 1
    row = previous.prompt_token_ids + previous.completion_token_ids
    assert continued.prompt_token_ids[: len(row)] == row  # the row continues across the restart
    assert retry.tags.get("retry_of") == 1 and retry.request_digest == previous.request_digest
    assert health["sessions_restored"] == 1 and health["answers_restored"] == 2


def test_a_torn_last_line_is_moved_aside_and_counted(fake_engine, tmp_path: Path) -> None:
    out, logs = tmp_path / "out", tmp_path / "logs"
    proxy = start_proxy_process(fake_engine.url, out, logs)
    try:
        httpx.post(f"{proxy.url}/s/run/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    finally:
        _kill(proxy)
    session = out / "run.jsonl"
    whole = session.read_bytes()
    torn = whole[: len(whole) // 2]  # what a kill inside the write of the next record leaves
    with session.open("ab") as fh:
        fh.write(torn)

    restarted = start_proxy_process(fake_engine.url, out, logs)
    try:
        assert session.read_bytes() == whole  # valid JSONL again, before any call
        assert (out / TORN_DIR / "run.torn").read_bytes() == torn + b"\n"
        health = _health(restarted)
        response = httpx.post(
            f"{restarted.url}/s/run/v1/chat/completions", json={"messages": [{"role": "user", "content": "again"}]}
        )
        assert response.status_code == 200
    finally:
        restarted.stop()
    assert health["torn_lines_repaired"] == 1
    assert [call.call_index for call in read_session(session)] == [0, 1]  # the new call appends cleanly
    assert "torn line" in (logs / "proxy.log").read_text()
