"""Everything the chat completions surface returns validates against OpenAI's published schemas.

Real HTTP to a proxy in front of the dev engine (TOOL_SCRIPT: a write_file call, then an
answer; or free generation cut by the token limit) and, for failures, the scripted fake
engine. Plain answers are checked against ``CreateChatCompletionResponse``; every streamed
chunk against ``CreateChatCompletionStreamResponse``; error bodies, plain or in-stream,
against ``ErrorResponse``. The engine's extras the client asked for (token ids,
logprobs, usage) are checked too.
"""

from __future__ import annotations

from typing import Any, Callable

import httpx
import pytest

from tests.components.proxy._images import data_url, png
from tests.components.proxy.surfaces._openapi import assert_conforms, broken, checked_answer, problems

WRITE_TOOL = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
    },
}
ASK = {"role": "user", "content": "Write hello to notes.txt."}
CALL = {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": '{"path": "notes.txt", "content": "hello"}'}}
TOOL_TURN = {"role": "assistant", "content": None, "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "written"}
IMAGE = {"role": "user", "content": [{"type": "text", "text": "What is on screen?"}, {"type": "image_url", "image_url": {"url": data_url(png(32, 24))}}]}
BASE = {"model": "gpt-x", "max_tokens": 64, "tools": [WRITE_TOOL]}
# name -> (request, whether the answer calls the tool): the scripted engine calls the tool
# without an assistant turn, and answers after the tool's result.
REQUESTS: dict[str, tuple[dict[str, Any], bool]] = {
    "tool_call": ({**BASE, "messages": [ASK]}, True),
    "text": ({**BASE, "messages": [ASK, TOOL_TURN, RESULT], "temperature": 0.5}, False),
    "image": ({**BASE, "messages": [{"role": "system", "content": "Be brief."}, IMAGE]}, True),
    "extras": ({**BASE, "messages": [ASK], "logprobs": True, "top_logprobs": 2, "stream_options": {"include_usage": True}}, True),
}


def _post(proxy: str, body: dict[str, Any]) -> httpx.Response:
    if not body.get("stream"):
        body = {key: value for key, value in body.items() if key != "stream_options"}
    return httpx.post(f"{proxy}/s/schemas/v1/chat/completions", json=body, timeout=120)


def _check(response: httpx.Response) -> list[dict[str, Any]]:
    return checked_answer("openai", response, body="CreateChatCompletionResponse", event="CreateChatCompletionStreamResponse")


def _called(checked: list[dict[str, Any]], stream: bool) -> bool:
    if not stream:
        return bool(checked[0]["choices"][0]["message"].get("tool_calls"))
    return any(choice["delta"].get("tool_calls") for chunk in checked for choice in chunk["choices"])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_answers_and_chunks_validate(name: str, stream: bool, tool_script_engine, make_proxy: Callable[..., str]) -> None:
    request, calls = REQUESTS[name]
    response = _post(make_proxy(tool_script_engine.url), {**request, "stream": stream})
    assert response.status_code == 200, response.text
    checked = _check(response)
    assert _called(checked, stream) is calls
    if name == "extras":
        with_logprobs = [c["choices"][0] for c in checked if c["choices"] and c["choices"][0].get("logprobs")]
        assert with_logprobs and with_logprobs[0]["logprobs"]["content"][0]["top_logprobs"]
        assert checked[-1]["usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_cut_by_the_token_limit_validates(stream: bool, dev_engine, make_proxy: Callable[..., str]) -> None:
    body = {"model": "gpt-x", "max_tokens": 2, "messages": [{"role": "user", "content": "Tell me a story."}], "stream": stream}
    checked = _check(_post(make_proxy(dev_engine.url), body))
    reasons = [choice["finish_reason"] for chunk in checked for choice in chunk["choices"] if choice["finish_reason"]]
    assert reasons == ["length"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_errors_validate(stream: bool, fake_engine, make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(fake_engine.url, upstream_retries=0)
    refused = _post(proxy, {"model": "m", "stream": stream})  # no messages
    assert refused.status_code == 400
    _check(refused)
    fake_engine.fail_status = 500
    failed = _post(proxy, {"model": "m", "messages": [ASK], "stream": stream})
    assert failed.status_code == 500
    _check(failed)


def test_a_stream_the_engine_cuts_ends_with_an_error_that_validates(fake_engine, make_proxy: Callable[..., str]) -> None:
    fake_engine.cut_stream = True
    checked = _check(_post(make_proxy(fake_engine.url), {"model": "m", "messages": [ASK], "stream": True}))
    assert checked[-1]["error"]["message"]


def test_the_schemas_refuse_a_completion_missing_a_required_field(tool_script_engine, make_proxy: Callable[..., str]) -> None:
    """The validation can fail: the same answer without a field the spec requires is refused."""
    request, _ = REQUESTS["text"]
    answer = _post(make_proxy(tool_script_engine.url), request).json()
    assert_conforms("openai", "CreateChatCompletionResponse", answer, "the completion")
    for field in ("id", "choices", "created", "model"):
        assert problems("openai", "CreateChatCompletionResponse", broken(answer, field)), field
