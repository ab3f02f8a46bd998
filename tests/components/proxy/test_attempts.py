"""Rollout attempts under one session (/s/<id>/a/<k>/...) and the upstream health check."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from components.core import read_session
from tests._servers import unshared_port
from components.core.trajectory import latest_attempt
from components.proxy.call_tags import CallTagger

MESSAGES = [{"role": "user", "content": "hi"}]


def _ask(base_url: str) -> None:
    openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0).chat.completions.create(
        model="m", messages=MESSAGES
    )


def test_attempt_route_tags_calls_and_does_not_take_a_new_attempt_for_a_retry(
    fake_proxy: str, fake_engine, tmp_path: Path
) -> None:
    _ask(f"{fake_proxy}/s/run-1/v1")
    _ask(f"{fake_proxy}/s/run-1/a/1/v1")  # the same first request, repeated by a retried rollout
    _ask(f"{fake_proxy}/s/run-1/a/1/v1")  # a true retry within attempt 1

    calls = read_session(tmp_path / "out" / "run-1.jsonl")
    assert [c.tags for c in calls] == [{}, {"attempt": 1}, {"attempt": 1, "retry_of": 1}]
    assert [c.call_index for c in latest_attempt(calls)] == [1, 2]
    assert httpx.get(f"{fake_proxy}/s/run-1/a/2/v1/models").json()["data"][0]["id"] == fake_engine.MODEL


@pytest.mark.parametrize("attempt", ["0", "100", "x", "01", "-1"])
def test_attempt_outside_1_to_99_is_refused_naming_the_rule(fake_proxy: str, attempt: str) -> None:
    answer = httpx.post(f"{fake_proxy}/s/run-1/a/{attempt}/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert answer.status_code == 400
    assert "integer from 1 to 99" in answer.json()["error"]["message"]
    assert httpx.get(f"{fake_proxy}/s/run-1/a/{attempt}/v1/models").status_code == 400


def test_tagger_keys_retries_on_session_and_attempt() -> None:
    tagger = CallTagger()
    tagger.arrive("s", "chat.completions", {}, "d1", {}).recorded(0)
    assert tagger.arrive("s", "chat.completions", {}, "d1", {}, attempt=1).tags() == {"attempt": 1}


def test_health_with_upstream_checks_the_engine(fake_proxy: str, make_proxy) -> None:
    assert httpx.get(f"{fake_proxy}/health", params={"upstream": "1"}).json()["ok"] is True

    dead = f"http://127.0.0.1:{unshared_port()}"
    proxy = make_proxy(dead)
    assert httpx.get(f"{proxy}/health").status_code == 200  # the proxy itself is fine
    answer = httpx.get(f"{proxy}/health", params={"upstream": "1"})
    assert answer.status_code == 503
    body = answer.json()
    assert body["ok"] is False and body["upstream"].startswith(dead) and dead in body["error"]
