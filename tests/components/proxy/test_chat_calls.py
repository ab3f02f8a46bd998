"""Chat completions through the proxy (fake engine): what the client sees, what is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import httpx
import openai
import pytest

from components.core import read_session

MESSAGES = [{"role": "user", "content": "hi"}]


def _client(proxy_url: str, session: str = "s1") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy_url}/s/{session}/v1", api_key="unused", max_retries=0)


def test_plain_call_is_recorded_with_tokens_and_policy_version(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    reply = _client(fake_proxy).chat.completions.create(model="gpt-x", messages=MESSAGES)
    assert reply.choices[0].message.content == fake_engine.TEXT
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.ok and call.api == "chat.completions" and call.stream is False
    assert call.model == fake_engine.MODEL and call.request["model"] == "gpt-x"
    assert call.policy_version == fake_engine.POLICY_VERSION
    assert call.prompt_token_ids == fake_engine.PROMPT_IDS
    assert call.completion_token_ids == fake_engine.TOKEN_IDS
    assert call.completion_logprobs == fake_engine.LOGPROBS
    assert call.finish_reason == "stop" and call.request_digest and call.upstream_status == 200


def test_upstream_is_asked_for_token_ids_logprobs_and_special_tokens(fake_proxy: str, fake_engine) -> None:
    _client(fake_proxy).chat.completions.create(model="gpt-x", messages=MESSAGES, top_logprobs=2)
    sent = fake_engine.requests[-1]
    assert sent["return_token_ids"] is True and sent["logprobs"] is True and sent["top_logprobs"] == 2
    assert sent["skip_special_tokens"] is False and sent["model"] == fake_engine.MODEL


def test_served_model_replaces_the_harness_model(fake_engine, make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(fake_engine.url, served_model="policy-a")
    _client(proxy).chat.completions.create(model="gpt-x", messages=MESSAGES)
    assert fake_engine.requests[-1]["model"] == "policy-a"


def test_client_that_did_not_ask_for_logprobs_gets_none(fake_proxy: str, tmp_path: Path) -> None:
    client = _client(fake_proxy)
    reply = client.chat.completions.create(model="m", messages=MESSAGES)
    assert reply.choices[0].logprobs is None
    raw = reply.model_dump()
    assert "prompt_token_ids" not in (reply.model_extra or {}) and "token_ids" not in raw["choices"][0]
    chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert all(choice.logprobs is None for chunk in chunks for choice in chunk.choices)
    assert all("token_ids" not in choice.model_dump() for chunk in chunks for choice in chunk.choices)
    assert all(chunk.usage is None for chunk in chunks)  # the usage the proxy asked for itself is hidden
    # ... while the record still holds everything training needs
    assert all(call.ok and call.completion_logprobs for call in read_session(tmp_path / "out" / "s1.jsonl"))


def test_client_that_asked_for_logprobs_and_usage_gets_them(fake_proxy: str, fake_engine) -> None:
    client = _client(fake_proxy)
    reply = client.chat.completions.create(model="m", messages=MESSAGES, logprobs=True)
    assert [entry.logprob for entry in reply.choices[0].logprobs.content] == fake_engine.LOGPROBS
    chunks = list(
        client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, logprobs=True, stream_options={"include_usage": True}
        )
    )
    streamed = [entry.logprob for chunk in chunks for choice in chunk.choices for entry in (choice.logprobs.content if choice.logprobs else [])]
    assert streamed == fake_engine.LOGPROBS
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 7


def test_streamed_record_matches_the_non_streamed_record(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    client = _client(fake_proxy)
    client.chat.completions.create(model="m", messages=MESSAGES)
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(model="m", messages=MESSAGES, stream=True) if c.choices)
    plain, streamed = read_session(tmp_path / "out" / "s1.jsonl")
    assert text == fake_engine.TEXT and streamed.stream and not plain.stream
    for field in ("prompt_token_ids", "completion_token_ids", "completion_logprobs", "finish_reason", "model", "policy_version"):
        assert getattr(streamed, field) == getattr(plain, field), field
    plain_choice, streamed_choice = plain.response["choices"][0], streamed.response["choices"][0]
    assert streamed_choice["message"]["content"] == plain_choice["message"]["content"]
    assert streamed.response["usage"] == plain.response["usage"]
    assert set(streamed.response) == set(plain.response)
    assert set(streamed_choice) == set(plain_choice)


def test_training_mode_overrides_sampling_and_records_it(fake_engine, make_proxy: Callable[..., str], tmp_path: Path) -> None:
    proxy = make_proxy(fake_engine.url, training=True)
    _client(proxy).chat.completions.create(model="m", messages=MESSAGES, temperature=0.1, top_p=0.3, max_tokens=5)
    sent = fake_engine.requests[-1]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (1.0, 1.0, 5)
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.sampling.overridden and (call.sampling.temperature, call.sampling.top_p) == (1.0, 1.0)
    assert call.request["temperature"] == 0.1  # the request stays as the harness sent it


def test_serving_mode_records_the_harness_sampling(fake_proxy: str, tmp_path: Path) -> None:
    _client(fake_proxy).chat.completions.create(model="m", messages=MESSAGES, temperature=0.7, seed=4)
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert not call.sampling.overridden and (call.sampling.temperature, call.sampling.seed) == (0.7, 4)


def test_n_other_than_one_is_refused(fake_proxy: str, fake_engine) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        _client(fake_proxy).chat.completions.create(model="m", messages=MESSAGES, n=2)
    assert "'n' must be 1" in caught.value.message and not fake_engine.requests


def test_header_sessions_group_calls_and_path_wins(fake_proxy: str, tmp_path: Path) -> None:
    url = f"{fake_proxy}/v1/chat/completions"
    body = {"model": "m", "messages": MESSAGES}
    httpx.post(url, json=body, headers={"X-Claude-Code-Session-Id": "cc-run"}).raise_for_status()
    httpx.post(url, json=body, headers={"session-id": "codex-run"}).raise_for_status()
    httpx.post(url, json=body, headers={"session-id": "codex-run"}).raise_for_status()
    httpx.post(url, json=body, headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}).raise_for_status()
    httpx.post(url, json=body).raise_for_status()
    httpx.post(f"{fake_proxy}/s/path-run/v1/chat/completions", json=body, headers={"session-id": "codex-run"}).raise_for_status()
    out = tmp_path / "out"
    counts = {path.stem: len(read_session(path)) for path in out.glob("*.jsonl")}
    assert counts == {"cc-run": 1, "codex-run": 2, "4bf92f3577b34da6a3ce929d0e0e4736": 1, "default": 1, "path-run": 1}


def test_bad_session_id_in_path_is_refused_and_nothing_is_written(fake_proxy: str, tmp_path: Path) -> None:
    response = httpx.post(f"{fake_proxy}/s/.secret/v1/chat/completions", json={"model": "m", "messages": MESSAGES})
    assert response.status_code == 400
    assert "letters, digits" in response.json()["error"]["message"]
    assert not list((tmp_path / "out").glob("*.jsonl"))


def test_traversal_in_a_header_stays_inside_the_output_directory(fake_proxy: str, tmp_path: Path) -> None:
    httpx.post(
        f"{fake_proxy}/v1/chat/completions",
        json={"model": "m", "messages": MESSAGES},
        headers={"session-id": "../../escaped"},
    ).raise_for_status()
    [path] = (tmp_path / "out").glob("*.jsonl")
    assert path.stem.startswith("h-") and not (tmp_path / "escaped.jsonl").exists()


def test_models_health_and_flush_answer_json(fake_proxy: str, fake_engine) -> None:
    models = httpx.get(f"{fake_proxy}/s/run-1/v1/models").json()
    assert models["data"][0]["id"] == fake_engine.MODEL
    _client(fake_proxy, "run-1").chat.completions.create(model="m", messages=MESSAGES)
    health = httpx.get(f"{fake_proxy}/health").json()
    assert health["ok"] and health["calls_recorded"] == 1 and health["sessions"] == 1
    assert httpx.post(f"{fake_proxy}/flush").json() == {"sessions": {"run-1": 1}}
    assert httpx.post(f"{fake_proxy}/flush", params={"session": "other"}).json() == {"sessions": {"other": 0}}
    assert httpx.post(f"{fake_proxy}/flush", params={"session": "../x"}).status_code == 400
