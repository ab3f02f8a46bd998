"""Responses with previous_response_id (Stagehand's computer-use mode): the proxy keeps the conversation."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from components.core import read_session, rebuild_request, rebuild_upstream_request
from components.proxy.conversations import Conversations
from components.proxy.errors import ProxyError
from tests.components.proxy._images import data_url, png

SCREEN_1 = png(40, 30, color=(1, 2, 3))
SCREEN_2 = png(40, 30, color=(4, 5, 6))


def _client(proxy: str, session: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0)


def _look(text: str, screen: bytes) -> list[dict]:
    return [{"role": "user", "content": [{"type": "input_text", "text": text}, {"type": "input_image", "image_url": data_url(screen)}]}]


def test_a_call_naming_its_previous_response_reaches_the_engine_as_the_whole_conversation(
    fake_proxy: str, fake_engine, tmp_path: Path
) -> None:
    client = _client(fake_proxy, "cu")
    first = client.responses.create(model="cu-model", instructions="Drive the browser.", input=_look("Open it.", SCREEN_1))
    second_input = _look("Now the next page.", SCREEN_2)
    with client.responses.stream(model="cu-model", previous_response_id=first.id, input=second_input) as stream:
        second = stream.get_final_response()
    assert second.previous_response_id == first.id
    third = client.responses.create(model="cu-model", previous_response_id=second.id, input="Done?")
    assert third.previous_response_id == second.id and len({first.id, second.id, third.id}) == 3

    engine_got = fake_engine.requests[-1]
    answer = {"role": "assistant", "content": fake_engine.TEXT}
    image = lambda screen: {"type": "image_url", "image_url": {"url": data_url(screen)}}  # noqa: E731
    assert engine_got["messages"] == [  # instructions are not carried over: the third call sent none
        {"role": "user", "content": [{"type": "text", "text": "Open it."}, image(SCREEN_1)]},
        answer,
        {"role": "user", "content": [{"type": "text", "text": "Now the next page."}, image(SCREEN_2)]},
        answer,
        {"role": "user", "content": "Done?"},
    ]
    out = tmp_path / "out"
    calls = read_session(out / "cu.jsonl")
    assert [c.translation.previous_response for c in calls] == [
        None, {"id": first.id, "call_index": 0, "items": 2}, {"id": second.id, "call_index": 1, "items": 4},
    ]  # fmt: skip
    assert calls[2].request == {"model": "cu-model", "previous_response_id": second.id, "input": "Done?"}  # as sent
    assert rebuild_upstream_request(calls[2], out / "images") == engine_got  # the earlier screenshots included
    assert rebuild_request(calls[1], out / "images")["input"] == second_input
    assert len(list((out / "images").iterdir())) == 2

    # Branching: a call may continue any kept response of its session, not only the latest.
    client.responses.create(model="cu-model", previous_response_id=first.id, input="Go back.")
    assert fake_engine.requests[-1]["messages"][1:] == [answer, {"role": "user", "content": "Go back."}]
    assert read_session(out / "cu.jsonl")[3].translation.previous_response == {"id": first.id, "call_index": 0, "items": 2}


def test_unknown_foreign_and_unstored_previous_responses_are_a_clear_400(fake_proxy: str, fake_engine) -> None:
    kept = _client(fake_proxy, "a").responses.create(model="m", input="hi")
    unstored = _client(fake_proxy, "b").responses.create(model="m", input="hi", store=False)
    for session, previous in (("a", "resp_never"), ("c", kept.id), ("b", unstored.id)):
        response = httpx.post(
            f"{fake_proxy}/s/{session}/v1/responses", json={"model": "m", "input": "more", "previous_response_id": previous}
        )
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["param"] == "previous_response_id" and "Send the whole conversation in 'input'" in error["message"]
    assert len(fake_engine.requests) == 2  # the refused calls never reached the engine


def test_conversations_are_forgotten_least_recently_used_first_within_the_memory_bound() -> None:
    conversations = Conversations(max_mb=1.0)
    request = {"model": "m", "input": "hi"}
    for n in range(3):
        response = {"id": f"resp_{n}", "output": [{"type": "message", "role": "assistant", "content": []}]}
        conversations.remember("s", "responses", request, response, call_index=n, refs={}, cost=400_000)
    expanded, continued = conversations.expand("s", "responses", {"input": "more", "previous_response_id": "resp_2"})
    assert continued.call_index == 2 and len(expanded["input"]) == 3 and "previous_response_id" not in expanded
    conversations.expand("s", "responses", {"input": "more", "previous_response_id": "resp_1"})  # still within 1 MB
    with pytest.raises(ProxyError, match="resp_0"):  # 3 x 400 kB > 1 MB: the oldest went
        conversations.expand("s", "responses", {"input": "more", "previous_response_id": "resp_0"})
    assert conversations.expand("s", "chat.completions", {"previous_response_id": "x"}) == ({"previous_response_id": "x"}, None)
