"""Everything the Responses surface returns validates against OpenAI's published schemas.

Real HTTP to a proxy in front of the dev engine (TOOL_SCRIPT: a write_file call, then an
answer; or free generation cut by the token limit) and, for failures, the scripted fake
engine. Plain answers are checked against ``Response``; every streamed event against
``ResponseStreamEvent`` (which holds the Response snapshots of ``response.created``,
``response.completed``, ...); error bodies against ``ErrorResponse``.
"""

from __future__ import annotations

from typing import Any, Callable

import httpx
import pytest

from tests.components.proxy._conversations import RESPONSES_ASK as ASK
from tests.components.proxy._conversations import RESPONSES_WRITE_TOOL as WRITE_TOOL
from tests.components.proxy._images import data_url, png
from tests.components.proxy.surfaces._openapi import assert_conforms, broken, checked_answer, problems

CALL = {"type": "function_call", "call_id": "call_1", "name": "write_file", "arguments": '{"path": "notes.txt", "content": "hello"}'}
RESULT = {"type": "function_call_output", "call_id": "call_1", "output": "written"}
IMAGE = {"role": "user", "content": [{"type": "input_text", "text": "What is on screen?"}, {"type": "input_image", "image_url": data_url(png(32, 24))}]}
# name -> (request, the output item types the answer must hold): the scripted engine calls
# the tool on a conversation without an assistant turn, and answers after the tool's result.
REQUESTS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "tool_call": ({"model": "gpt-codex", "input": [ASK], "tools": [WRITE_TOOL]}, ["function_call"]),
    "text": ({"model": "gpt-codex", "input": [ASK, CALL, RESULT], "tools": [WRITE_TOOL], "temperature": 0.5}, ["message"]),
    "image": ({"model": "gpt-codex", "input": [IMAGE], "tools": [WRITE_TOOL], "instructions": "Be brief.", "top_p": 0.9}, ["function_call"]),
}


def _post(proxy: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{proxy}/s/schemas/v1/responses", json=body, timeout=120)


def _final(checked: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    return checked[-1]["response"] if stream else checked[0]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_answers_and_events_validate(name: str, stream: bool, tool_script_engine, make_proxy: Callable[..., str]) -> None:
    request, kinds = REQUESTS[name]
    response = _post(make_proxy(tool_script_engine.url), {**request, "stream": stream})
    assert response.status_code == 200, response.text
    checked = checked_answer("openai", response, body="Response", event="ResponseStreamEvent")
    final = _final(checked, stream)
    assert [item["type"] for item in final["output"]] == kinds
    assert final["status"] == "completed"
    if stream:
        types = [event["type"] for event in checked]
        assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_cut_by_the_token_limit_validates(stream: bool, dev_engine, make_proxy: Callable[..., str]) -> None:
    body = {"model": "gpt-codex", "input": "Tell me a long story.", "max_output_tokens": 2, "stream": stream}
    checked = checked_answer("openai", _post(make_proxy(dev_engine.url), body), body="Response", event="ResponseStreamEvent")
    final = _final(checked, stream)
    assert (final["status"], final["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_errors_validate(stream: bool, fake_engine, make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(fake_engine.url, upstream_retries=0)
    refused = _post(proxy, {"model": "m", "stream": stream})  # no input
    assert refused.status_code == 400
    checked_answer("openai", refused, body="Response", event="ResponseStreamEvent")
    fake_engine.fail_status = 500
    failed = _post(proxy, {"model": "m", "input": "hi", "stream": stream})
    assert failed.status_code == 500
    checked_answer("openai", failed, body="Response", event="ResponseStreamEvent")


def test_a_stream_the_engine_cuts_ends_with_a_failed_response_that_validates(fake_engine, make_proxy: Callable[..., str]) -> None:
    fake_engine.cut_stream = True
    response = _post(make_proxy(fake_engine.url), {"model": "m", "input": "hi", "stream": True})
    checked = checked_answer("openai", response, body="Response", event="ResponseStreamEvent")
    assert checked[-1]["type"] == "response.failed" and checked[-1]["response"]["error"]["message"]


def test_the_schemas_refuse_a_response_missing_a_required_field(tool_script_engine, make_proxy: Callable[..., str]) -> None:
    """The validation can fail: the same answer without a field the spec requires is refused."""
    request, _ = REQUESTS["text"]
    answer = _post(make_proxy(tool_script_engine.url), request).json()
    assert_conforms("openai", "Response", answer, "the Response")
    for field in ("id", "output", "created_at", "tools"):
        assert problems("openai", "Response", broken(answer, field)), field


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_namespaced_and_computer_calls_validate(stream: bool, fake_engine, make_proxy: Callable[..., str]) -> None:
    """Codex's namespaced function calls and Stagehand's computer calls, as items and events."""
    namespace = {"type": "namespace", "name": "files", "description": "Files.", "tools": [{"type": "function", "name": "read"}]}
    computer = {"type": "computer_use_preview", "display_width": 1280, "display_height": 800, "environment": "browser"}
    fake_engine.tool_calls = [
        {"name": "files__read", "arguments": '{"path": "a"}'},
        {"name": "computer", "arguments": '{"type": "click", "button": "left", "x": 10, "y": 20}'},
    ]
    body = {"model": "m", "input": "go", "tools": [namespace, computer], "stream": stream}
    checked = checked_answer("openai", _post(make_proxy(fake_engine.url), body), body="Response", event="ResponseStreamEvent")
    assert [item["type"] for item in _final(checked, stream)["output"]] == ["function_call", "computer_call"]
