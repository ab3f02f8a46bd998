"""Per-session tokens, and keys that must never travel: the harness's upstream, the proxy's to anyone."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from components.core import read_session
from components.proxy import session_token
from components.proxy.auth import TOKEN_PREFIX

SECRET = b"test-secret-0123456789abcdef"
GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
SURFACES = {
    "chat": ("/v1/chat/completions", GOOD),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
}


def _message(surface: str, response: httpx.Response) -> str:
    body = response.json()
    return body["error"]["message"]  # both shapes keep the message under "error"


def test_session_token_is_versioned_and_bound_to_session_and_secret() -> None:
    token = session_token(SECRET, "rollout-1")
    assert token.startswith(TOKEN_PREFIX) and token == session_token(SECRET, "rollout-1")
    assert token != session_token(SECRET, "rollout-2")
    assert token != session_token(b"another-secret-0123456789", "rollout-1")
    assert SECRET.decode() not in token


@pytest.fixture
def secured(fake_engine, make_proxy: Callable[..., str]) -> str:
    return make_proxy(fake_engine.url, session_secret=SECRET)


@pytest.mark.parametrize("header", ["authorization", "x-api-key", "api-key"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_the_sessions_token_in_any_key_header_is_accepted(secured: str, tmp_path: Path, surface: str, header: str) -> None:
    token = session_token(SECRET, "r1")
    value = f"Bearer {token}" if header == "authorization" else token
    path, body = SURFACES[surface]
    response = httpx.post(f"{secured}/s/r1{path}", json=body, headers={header: value})
    assert response.status_code == 200, response.text
    assert read_session(tmp_path / "out" / "r1.jsonl")[0].ok


@pytest.mark.parametrize("surface", list(SURFACES))
def test_missing_token_is_401_and_another_sessions_token_is_403_neither_recorded(
    secured: str, fake_engine, tmp_path: Path, surface: str
) -> None:
    path, body = SURFACES[surface]
    missing = httpx.post(f"{secured}/s/r1{path}", json=body)
    assert missing.status_code == 401
    assert "'r1'" in _message(surface, missing) and "x-api-key" in _message(surface, missing)
    foreign = httpx.post(f"{secured}/s/r1{path}", json=body, headers={"x-api-key": session_token(SECRET, "r2")})
    assert foreign.status_code == 403 and "not valid for session 'r1'" in _message(surface, foreign)
    if surface == "messages":
        assert missing.json()["error"]["type"] == "authentication_error"
        assert foreign.json()["error"]["type"] == "permission_error"
    else:
        assert missing.json()["error"]["code"] == "missing_session_token"
    assert not fake_engine.requests and not list((tmp_path / "out").glob("*.jsonl"))
    assert httpx.get(f"{secured}/health").json()["calls_refused_auth"] == 2


def test_a_session_named_by_headers_needs_that_sessions_token(secured: str, tmp_path: Path) -> None:
    url = f"{secured}/v1/messages"
    body = SURFACES["messages"][1]
    headers = {"X-Claude-Code-Session-Id": "cc-1"}
    wrong = httpx.post(url, json=body, headers={**headers, "x-api-key": session_token(SECRET, "default")})
    assert wrong.status_code == 403 and "'cc-1'" in _message("messages", wrong)
    right = httpx.post(url, json=body, headers={**headers, "x-api-key": session_token(SECRET, "cc-1")})
    assert right.status_code == 200
    assert [call.session_id for call in read_session(tmp_path / "out" / "cc-1.jsonl")] == ["cc-1"]


def test_models_and_flush_need_the_sessions_token(secured: str) -> None:
    auth = {"Authorization": f"Bearer {session_token(SECRET, 'r1')}"}
    assert httpx.get(f"{secured}/s/r1/v1/models").status_code == 401
    assert httpx.get(f"{secured}/s/r2/v1/models", headers=auth).status_code == 403
    assert httpx.get(f"{secured}/s/r1/v1/models", headers=auth).json()["data"][0]["id"]
    assert httpx.post(f"{secured}/s/r1/v1/chat/completions", json=GOOD, headers=auth).status_code == 200
    assert httpx.post(f"{secured}/flush?session=r1").status_code == 401
    assert httpx.post(f"{secured}/flush?session=r2", headers=auth).status_code == 403
    assert httpx.post(f"{secured}/flush?session=r1", headers=auth).json() == {"sessions": {"r1": 1}}
    whole = httpx.post(f"{secured}/flush", headers=auth)
    assert whole.status_code == 403 and "/flush?session=" in whole.json()["error"]["message"]
    health = httpx.get(f"{secured}/health")  # a liveness probe: open, and it holds no secret
    assert health.status_code == 200 and health.json()["session_tokens_required"] is True


def test_without_a_secret_no_key_is_needed(fake_proxy: str) -> None:
    assert httpx.post(f"{fake_proxy}/s/r1/v1/chat/completions", json=GOOD).status_code == 200
    assert httpx.post(f"{fake_proxy}/flush").status_code == 200


HARNESS_KEY = "sk-harness-key-must-stay-home"
UPSTREAM_KEY = "sk-upstream-key-never-shown-42"


def test_keys_never_leak_harness_key_stays_home_upstream_key_stays_upstream(
    capturing_engine: Any, make_proxy: Callable[..., str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine, url, seen = capturing_engine
    proxy = make_proxy(url, session_secret=SECRET, upstream_api_key=UPSTREAM_KEY)
    token = session_token(SECRET, "r1")
    answers: list[httpx.Response] = []
    with caplog.at_level(logging.DEBUG):
        for surface, (path, body) in SURFACES.items():
            for stream in (False, True):
                headers = {"Authorization": f"Bearer {token}", "x-api-key": HARNESS_KEY, "api-key": HARNESS_KEY}
                answers.append(httpx.post(f"{proxy}/s/r1{path}", json={**body, "stream": stream}, headers=headers))
        engine.fail_status = 500  # error answers and failed records too
        answers.append(httpx.post(f"{proxy}/s/r1/v1/chat/completions", json=GOOD, headers={"x-api-key": token}))
        answers.append(httpx.post(f"{proxy}/s/r1/v1/chat/completions", json=GOOD, headers={"x-api-key": HARNESS_KEY}))
        answers.append(httpx.get(f"{proxy}/s/r1/v1/models", headers={"x-api-key": token}))
        answers.append(httpx.get(f"{proxy}/health"))
    assert [a.status_code for a in answers] == [200] * 6 + [500, 403, 200, 200]
    chat_requests = [h for h in seen if h.get("Content-Type") == "application/json"]
    assert len(chat_requests) == 7 and len(seen) > 7  # the model list was read too
    for headers in seen:
        assert headers["Authorization"] == f"Bearer {UPSTREAM_KEY}"
        assert not {"x-api-key", "api-key"} & {name.lower() for name in headers}
        assert HARNESS_KEY not in str(headers) and token not in str(headers)
    secrets = (UPSTREAM_KEY, SECRET.decode(), HARNESS_KEY)
    everything = "".join(a.text + str(a.headers) for a in answers)
    everything += (tmp_path / "out" / "r1.jsonl").read_text() + caplog.text
    assert len(read_session(tmp_path / "out" / "r1.jsonl")) == 7
    assert "answered 500" in caplog.text  # the log did get lines worth searching
    for secret in secrets:
        assert secret not in everything
