"""Bad requests get clear 400s in vLLM's error shape, and the engine keeps serving."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests._servers import EngineServer

CHAT = "/v1/chat/completions"
OK_MESSAGES = [{"role": "user", "content": "hi"}]


def _assert_error(resp: httpx.Response, status: int, *mentions: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == status
    for word in mentions:
        assert word in error["message"], error["message"]
    return error


def _still_serving(engine: EngineServer) -> None:
    resp = httpx.post(engine.url + CHAT, json={"messages": OK_MESSAGES, "max_tokens": 1}, timeout=60)
    assert resp.status_code == 200 and resp.json()["usage"]["completion_tokens"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": "hi"}, "messages"),
        ({"messages": OK_MESSAGES, "temperature": "hot"}, "temperature"),
        ({"messages": OK_MESSAGES, "max_tokens": 0}, "max_tokens"),
        ({"messages": OK_MESSAGES, "n": 2}, "n"),
        ({"messages": OK_MESSAGES, "top_logprobs": 2}, "top_logprobs"),
        ({"messages": OK_MESSAGES, "frequency_penalty": 0.5}, "frequency_penalty"),
        ({"messages": OK_MESSAGES, "stop": 5}, "stop"),
        ({"messages": [{"content": "no role"}]}, "messages[0]"),
        ({"messages": OK_MESSAGES, "max_tokens": 10**6}, "max_tokens"),
    ],
)
def test_wrong_fields_are_400s_naming_the_field(dev_engine: EngineServer, body: dict[str, Any], field: str) -> None:
    error = _assert_error(httpx.post(dev_engine.url + CHAT, json=body), 400, field)
    assert error["type"] == "BadRequestError" and error["param"] is not None and error["param"].startswith(field)
    _still_serving(dev_engine)


def test_malformed_json_is_a_400(dev_engine: EngineServer) -> None:
    resp = httpx.post(dev_engine.url + CHAT, content=b'{"messages": [', headers={"Content-Type": "application/json"})
    _assert_error(resp, 400, "not valid JSON")
    _assert_error(httpx.post(dev_engine.url + CHAT, json=[1, 2]), 400, "JSON object")
    _still_serving(dev_engine)


def test_prompt_longer_than_the_context_is_vllms_400(dev_engine: EngineServer) -> None:
    limit = httpx.get(dev_engine.url + "/v1/models").json()["data"][0]["max_model_len"]
    resp = httpx.post(dev_engine.url + "/v1/completions", json={"prompt": [17] * (limit + 1)}, timeout=60)
    _assert_error(resp, 400, f"maximum context length is {limit} tokens", f"{limit + 1} input tokens")
    long_chat = {"messages": [{"role": "user", "content": "a " * (limit + 10)}]}
    _assert_error(httpx.post(dev_engine.url + CHAT, json=long_chat, timeout=60), 400, "maximum context length")
    _still_serving(dev_engine)


def test_unknown_paths_methods_and_models_answer_in_the_error_shape(dev_engine: EngineServer) -> None:
    _assert_error(httpx.get(dev_engine.url + "/v1/nothing"), 404)
    _assert_error(httpx.get(dev_engine.url + CHAT), 405)
    error = _assert_error(httpx.post(dev_engine.url + CHAT, json={"model": "gpt-9", "messages": OK_MESSAGES}), 404, "gpt-9")
    assert error["param"] == "model"
    _still_serving(dev_engine)


def test_unknown_extra_fields_are_accepted_like_vllm(dev_engine: EngineServer) -> None:
    body = {"messages": OK_MESSAGES, "max_tokens": 1, "skip_special_tokens": False, "some_future_field": {"x": 1}}
    assert httpx.post(dev_engine.url + CHAT, json=body, timeout=60).status_code == 200
