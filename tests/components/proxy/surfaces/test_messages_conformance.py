"""Everything the Messages surface returns validates against Anthropic's published schemas.

Real HTTP to a proxy in front of the dev engine (TOOL_SCRIPT: a write_file call, then an
answer; or free generation cut by the token limit) and, for failures, the scripted fake
engine. Plain answers are checked against ``Message``; every streamed event against
``MessageStreamEvent`` (``message_start`` holds a Message snapshot); error bodies, plain
or in-stream, against ``ErrorResponse``. Where the schemas come from, and why that
repository: tests/components/proxy/surfaces/_openapi.py.
"""

from __future__ import annotations

from typing import Any, Callable

import httpx
import pytest

from tests.components.proxy._conversations import MESSAGES_ASK as ASK
from tests.components.proxy._conversations import MESSAGES_TOOL_RESULT as TOOL_RESULT
from tests.components.proxy._conversations import MESSAGES_TOOL_TURN as TOOL_TURN
from tests.components.proxy._conversations import MESSAGES_WRITE_TOOL as WRITE_TOOL
from tests.components.proxy._images import b64, png
from tests.components.proxy.surfaces._openapi import assert_conforms, broken, checked_answer, problems

SCREEN = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(png(32, 24))}}
IMAGE = {"role": "user", "content": [{"type": "text", "text": "What is on screen?"}, SCREEN]}
BASE = {"model": "claude-x", "max_tokens": 64, "tools": [WRITE_TOOL]}
# name -> (request, the content block types and stop reason the answer must have): the
# scripted engine calls the tool without an assistant turn, and answers after the result.
REQUESTS: dict[str, tuple[dict[str, Any], list[str], str]] = {
    "tool_call": ({**BASE, "messages": [ASK]}, ["tool_use"], "tool_use"),
    "text": ({**BASE, "messages": [ASK, TOOL_TURN, TOOL_RESULT], "temperature": 0.5}, ["text"], "end_turn"),
    "image": ({**BASE, "messages": [IMAGE], "system": "Be brief."}, ["tool_use"], "tool_use"),
}


def _post(proxy: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{proxy}/s/schemas/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}, timeout=120)


def _check(response: httpx.Response) -> list[dict[str, Any]]:
    return checked_answer("anthropic", response, body="Message", event="MessageStreamEvent")


def _outcome(checked: list[dict[str, Any]], stream: bool) -> tuple[list[str], str]:
    """(content block types, stop reason) of a plain Message or a stream's events."""
    if not stream:
        return [block["type"] for block in checked[0]["content"]], checked[0]["stop_reason"]
    blocks = [event["content_block"]["type"] for event in checked if event["type"] == "content_block_start"]
    [delta] = [event for event in checked if event["type"] == "message_delta"]
    return blocks, delta["delta"]["stop_reason"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_answers_and_events_validate(name: str, stream: bool, tool_script_engine, make_proxy: Callable[..., str]) -> None:
    request, blocks, reason = REQUESTS[name]
    response = _post(make_proxy(tool_script_engine.url), {**request, "stream": stream})
    assert response.status_code == 200, response.text
    checked = _check(response)
    assert _outcome(checked, stream) == (blocks, reason)
    if stream:
        types = [event["type"] for event in checked]
        assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_answer_cut_by_the_token_limit_validates(stream: bool, dev_engine, make_proxy: Callable[..., str]) -> None:
    body = {"model": "claude-x", "max_tokens": 2, "messages": [{"role": "user", "content": "Tell me a story."}], "stream": stream}
    checked = _check(_post(make_proxy(dev_engine.url), body))
    assert _outcome(checked, stream)[1] == "max_tokens"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_errors_validate(stream: bool, fake_engine, make_proxy: Callable[..., str]) -> None:
    proxy = make_proxy(fake_engine.url, upstream_retries=0)
    refused = _post(proxy, {"model": "m", "messages": [ASK], "stream": stream})  # no max_tokens
    assert refused.status_code == 400
    _check(refused)
    for status in (500, 504, 413, 429):
        fake_engine.fail_status = status
        failed = _post(proxy, {"model": "m", "max_tokens": 8, "messages": [ASK], "stream": stream})
        assert failed.status_code == status
        _check(failed)


def test_a_stream_the_engine_cuts_ends_with_an_error_event_that_validates(fake_engine, make_proxy: Callable[..., str]) -> None:
    fake_engine.cut_stream = True
    response = _post(make_proxy(fake_engine.url), {"model": "m", "max_tokens": 8, "messages": [ASK], "stream": True})
    checked = _check(response)
    assert checked[-1]["type"] == "error" and checked[-1]["error"]["message"]


def test_the_schemas_refuse_a_message_missing_a_required_field(tool_script_engine, make_proxy: Callable[..., str]) -> None:
    """The validation can fail: the same answer without a field the spec requires is refused."""
    request, _, _ = REQUESTS["text"]
    answer = _post(make_proxy(tool_script_engine.url), request).json()
    assert_conforms("anthropic", "Message", answer, "the Message")
    for field in ("id", "content", "stop_reason", "usage"):
        assert problems("anthropic", "Message", broken(answer, field)), field
