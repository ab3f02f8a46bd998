"""Bad requests and upstream failures: clear errors, failed calls recorded, the proxy keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import httpx
import pytest

from components.core import read_session
from tests._servers import unshared_port

GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _post(proxy: str, body: object = None, *, content: bytes | None = None, session: str = "s1") -> httpx.Response:
    url = f"{proxy}/s/{session}/v1/chat/completions"
    return httpx.post(url, content=content, headers={"Content-Type": "application/json"}) if content is not None else httpx.post(url, json=body)


def _message(response: httpx.Response) -> str:
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}  # OpenAI's error shape
    return error["message"]


def _assert_still_serving(proxy: str, out: Path) -> None:
    response = _post(proxy, GOOD, session="after")
    assert response.status_code == 200
    assert read_session(out / "after.jsonl")[-1].ok


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object, got an array"),
        (b'{"model": "m"}', "'messages' is required"),
        (b'{"model": "m", "messages": "hi"}', "'messages' must be a list"),
        (b'{"model": "m", "messages": ["hi"]}', "'messages[0]' must be an object"),
        (b'{"model": "m", "messages": [], "stream": "yes"}', "'stream' must be true or false"),
    ],
)
def test_malformed_requests_get_400_naming_the_problem(fake_proxy: str, fake_engine, tmp_path: Path, content: bytes, expected: str) -> None:
    response = _post(fake_proxy, content=content)
    assert response.status_code == 400 and expected in _message(response)
    assert not fake_engine.requests and not (tmp_path / "out" / "s1.jsonl").exists()
    _assert_still_serving(fake_proxy, tmp_path / "out")


def test_unknown_path_and_wrong_method_answer_json(fake_proxy: str, tmp_path: Path) -> None:
    missing = httpx.post(f"{fake_proxy}/v2/chat")
    assert missing.status_code == 404 and "/v1/chat/completions" in _message(missing)
    wrong = httpx.get(f"{fake_proxy}/v1/chat/completions")
    assert wrong.status_code == 405 and "POST" in _message(wrong) and wrong.headers["Allow"] == "POST"
    _assert_still_serving(fake_proxy, tmp_path / "out")


def test_oversized_request_is_refused_with_the_option_to_raise(fake_engine, make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(fake_engine.url, max_request_mb=0.01)
    response = _post(proxy, {"model": "m", "messages": [{"role": "user", "content": "x" * 20_000}]})
    assert response.status_code == 413 and "--max-request-mb" in _message(response)


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_down_is_502_naming_it_and_the_call_is_recorded(make_proxy: Callable[..., str], tmp_path: Path, stream: bool) -> None:
    dead = f"http://127.0.0.1:{unshared_port()}"
    proxy = make_proxy(dead)
    response = _post(proxy, {**GOOD, "stream": stream})
    assert response.status_code == 502
    message = _message(response)
    assert dead in message and "connection refused" in message
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert not call.ok and call.upstream_status == 0 and "unreachable" in call.error


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_500_passes_through_with_its_message(fake_proxy: str, fake_engine, tmp_path: Path, stream: bool) -> None:
    fake_engine.fail_status = 500
    response = _post(fake_proxy, {**GOOD, "stream": stream})
    assert response.status_code == 500 and "answered 500: engine exploded" in _message(response)
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.upstream_status == 500 and not call.ok and call.response is None
    fake_engine.fail_status = None
    _assert_still_serving(fake_proxy, tmp_path / "out")


def test_upstream_429_always_carries_retry_after(fake_proxy: str, fake_engine) -> None:
    fake_engine.fail_status = 429
    response = _post(fake_proxy, GOOD)
    assert response.status_code == 429 and response.headers["Retry-After"]


def test_upstream_timeout_is_504(fake_engine, make_proxy: Callable[..., str], tmp_path: Path) -> None:
    fake_engine.hang_s = 1.0
    proxy = make_proxy(fake_engine.url, upstream_timeout_s=0.2)
    response = _post(proxy, GOOD)
    assert response.status_code == 504 and "did not answer within 0.2s" in _message(response)
    assert "did not answer" in read_session(tmp_path / "out" / "s1.jsonl")[0].error
    fake_engine.hang_s = 0
    _assert_still_serving(proxy, tmp_path / "out")


def test_stream_cut_by_the_upstream_is_recorded_as_failed(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.cut_stream = True
    with httpx.stream("POST", f"{fake_proxy}/s/s1/v1/chat/completions", json={**GOOD, "stream": True}) as response:
        body = b"".join(response.iter_bytes())
    assert b"[DONE]" not in body and b'"error"' in body  # the client is told, not left with a silent short answer
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert not call.ok and call.error
    fake_engine.cut_stream = False
    _assert_still_serving(fake_proxy, tmp_path / "out")
