"""Sessions and tags through the proxy: grouping order, side calls, retries counted once in training."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import anthropic
import httpx
import pytest

from components.core import read_session
from components.trainer.rows import merge_calls

BODY = {"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLAUDE_CODE_HEADERS = {
    "X-Claude-Code-Session-Id": "cc-session",
    "session-id": "codex-session",
    "traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01",
}


@pytest.fixture
def training_proxy(fake_engine, make_proxy: Callable[..., str]) -> str:
    """Training mode: the recorded temperature is the one rows are built for."""
    return make_proxy(fake_engine.url, training=True)


def _post(url: str, headers: dict[str, str]) -> None:
    assert httpx.post(url, json=BODY, headers=headers).status_code == 200


def test_session_is_the_path_id_then_harness_headers_then_the_trace_id(fake_proxy: str, tmp_path: Path) -> None:
    _post(f"{fake_proxy}/s/rollout-1/v1/messages?beta=true", CLAUDE_CODE_HEADERS)
    _post(f"{fake_proxy}/v1/messages?beta=true", CLAUDE_CODE_HEADERS)
    _post(f"{fake_proxy}/v1/messages", {"session-id": "codex-session", "traceparent": CLAUDE_CODE_HEADERS["traceparent"]})
    _post(f"{fake_proxy}/v1/messages", {"traceparent": CLAUDE_CODE_HEADERS["traceparent"]})
    files = sorted(path.stem for path in (tmp_path / "out").glob("*.jsonl"))
    assert files == sorted(["rollout-1", "cc-session", "codex-session", TRACE_ID])


def test_title_call_is_tagged_and_left_out_of_training_rows(training_proxy: str, tmp_path: Path) -> None:
    client = anthropic.Anthropic(base_url=f"{training_proxy}/s/s1", api_key="unused", max_retries=0)
    client.messages.create(**BODY, tools=[{"name": "Bash", "input_schema": {"type": "object"}}])
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    client.messages.create(**BODY, tools=[], output_config={"format": {"type": "json_schema", "schema": schema}})
    turn, title = read_session(tmp_path / "out" / "s1.jsonl")
    assert not turn.tags and title.tags == {"side_call": "output_config.format without tools"}
    rows, counts = merge_calls("s1", [turn, title], temperature=1.0)
    assert len(rows) == 1 and counts.breaks == 0 and rows[0].prompt == turn.prompt_token_ids


def test_sdk_retry_after_a_failure_is_recorded_as_a_retry_and_trained_once(training_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.fail_status, fake_engine.fail_calls = 500, 1  # the SDK's second attempt succeeds
    client = anthropic.Anthropic(base_url=f"{training_proxy}/s/s1", api_key="unused", max_retries=1)
    client.messages.create(**BODY)
    failed, retry = read_session(tmp_path / "out" / "s1.jsonl")
    assert failed.upstream_status == 500 and not failed.ok
    assert retry.ok and retry.tags == {"retry_of": 0, "retry_count": 1} and retry.request_digest == failed.request_digest
    rows, counts = merge_calls("s1", [failed, retry], temperature=1.0)
    assert len(rows) == 1 and rows[0].response == retry.completion_token_ids


def test_answered_request_sent_again_supersedes_the_first_answer(training_proxy: str, tmp_path: Path) -> None:
    url = f"{training_proxy}/s/s1/v1/messages"
    _post(url, {})
    _post(url, {})  # e.g. the harness timed out reading the first answer and sent the request again
    first, again = read_session(tmp_path / "out" / "s1.jsonl")
    assert first.ok and again.tags == {"retry_of": 0}
    rows, counts = merge_calls("s1", [first, again], temperature=1.0)
    assert counts.superseded == 1 and len(rows) == 1
