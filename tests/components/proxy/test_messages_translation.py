"""Anthropic Messages through the proxy (fake engine): what the engine is sent, errors, the record."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import pytest

from components.core import read_session

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a command",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        "cache_control": {"type": "ephemeral"},
    },
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
]
# What Claude Code sends, trimmed: system blocks with cache_control, a tool round trip that
# failed, a thinking block in the history, a document, and a mid-conversation system message
# (images have their own tests: test_images.py).
CLAUDE_CODE_BODY = {
    "model": "claude-sonnet-x",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>ctx</system-reminder>"}, {"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "no such dir"}], "is_error": True},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}},
                {"type": "text", "text": "try again", "cache_control": {"type": "ephemeral"}},
            ],
        },
        {"role": "system", "content": "The user is in a hurry."},
        {"role": "user", "content": "go"},
    ],
    "tools": TOOLS,
    "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    "stop_sequences": ["END"],
    "temperature": 0.5,
    "top_k": 40,
    "metadata": {"user_id": '{"session_id": "abc"}'},
    "thinking": {"type": "adaptive"},
    "context_management": {"edits": []},
    "output_config": {"effort": "high"},
}


def _client(proxy: str, session: str = "s1", **options) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=f"{proxy}/s/{session}", api_key="unused", max_retries=0, **options)


def test_claude_code_request_is_translated_to_chat_and_the_translation_recorded(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    response = httpx.post(f"{fake_proxy}/s/s1/v1/messages?beta=true", json=CLAUDE_CODE_BODY)
    assert response.status_code == 200, response.text
    sent = fake_engine.requests[-1]
    assert sent["messages"] == [
        {"role": "system", "content": "You are Claude Code.\nBe brief."},
        {"role": "user", "content": "<system-reminder>ctx</system-reminder>\nlist files"},
        {
            "role": "assistant",
            "content": "Listing.",
            "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}}],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no such dir"},
        {"role": "user", "content": "try again"},
        {"role": "system", "content": "The user is in a hurry."},
        {"role": "user", "content": "go"},
    ]
    assert sent["tools"] == [
        {"type": "function", "function": {"name": "Bash", "description": "Run a command", "parameters": TOOLS[0]["input_schema"]}}
    ]
    assert sent["tool_choice"] == "required" and sent["parallel_tool_calls"] is False
    assert sent["stop"] == ["END"] and sent["temperature"] == 0.5 and sent["top_k"] == 40 and sent["max_tokens"] == 64
    for absent in ("thinking", "metadata", "output_config", "context_management", "system", "stop_sequences"):
        assert absent not in sent
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.ok and call.api == "anthropic.messages" and call.request == CLAUDE_CODE_BODY
    assert call.translation.upstream_request["messages"] == sent["messages"]
    assert call.translation.dropped == ["messages[1].content[0] (thinking)", "messages[2].content[1] (document)", "tools[1] (type web_search_20250305)"]
    assert {"context_management", "metadata", "output_config", "thinking", "cache_control"} <= set(call.translation.ignored)
    assert call.translation.mapped == [
        "messages[2].content[0] is_error -> content prefixed 'Error: '",
        "messages[3] role system -> chat system message",
    ]
    assert call.response["content"] == [{"type": "text", "text": fake_engine.TEXT, "citations": None}]


def test_final_assistant_text_is_continued_like_an_anthropic_prefill(fake_proxy: str, fake_engine) -> None:
    prefill = [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "The colour is"}]
    _client(fake_proxy).messages.create(model="m", max_tokens=8, messages=prefill)
    sent = fake_engine.requests[-1]
    assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
    assert sent["messages"][-1] == {"role": "assistant", "content": "The colour is"}


def test_sdk_gets_a_message_with_usage_and_end_turn(fake_proxy: str, fake_engine) -> None:
    message = _client(fake_proxy).messages.create(model="claude-x", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == fake_engine.TEXT and message.model == "claude-x"
    assert message.stop_reason == "end_turn" and message.usage.input_tokens == 3 and message.usage.output_tokens == 4


def test_stream_events_reassemble_to_the_plain_message(fake_proxy: str, tmp_path: Path) -> None:
    client = _client(fake_proxy)
    request = {"model": "claude-x", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    plain = client.messages.create(**request)
    with client.messages.stream(**request) as stream:
        streamed = stream.get_final_message()
    assert streamed.model_dump(exclude={"id"}) == plain.model_dump(exclude={"id"})
    first, second = read_session(tmp_path / "out" / "s1.jsonl")
    assert second.stream and second.response["id"] == streamed.id  # the record holds what the client saw
    assert second.response == {**first.response, "id": streamed.id}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([1], "must be a JSON object, got an array"),
        ({"model": "m", "max_tokens": 8}, "'messages' is required"),
        ({"model": "m", "max_tokens": 8, "messages": "hi"}, "'messages' must be an array"),
        ({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "'max_tokens' is required"),
        ({"model": "m", "max_tokens": 0, "messages": []}, "'max_tokens' must be a positive integer"),
        ({"model": "m", "max_tokens": 8, "messages": [{"role": "robot", "content": "hi"}]}, "'messages[0].role' must be"),
        ({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": 5}]}, "'messages[0].content' must be an array"),
        ({"model": "m", "max_tokens": 8, "messages": [], "system": [{"type": "image"}]}, "'system[0]' must be a text block"),
        ({"model": "m", "max_tokens": 8, "messages": [], "tools": [{"name": "x"}]}, "'tools[0].input_schema' must be an object"),
        ({"model": "m", "max_tokens": 8, "messages": [], "tool_choice": {"type": "maybe"}}, "'tool_choice.type' must be"),
        ({"model": "m", "max_tokens": 8, "messages": [], "stream": "yes"}, "'stream' must be true or false"),
    ],
)
def test_malformed_bodies_get_anthropic_shaped_400_and_the_proxy_keeps_serving(
    fake_proxy: str, fake_engine, tmp_path: Path, body: object, expected: str
) -> None:
    response = httpx.post(f"{fake_proxy}/s/s1/v1/messages", json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert expected in error["error"]["message"]
    assert not fake_engine.requests and not (tmp_path / "out" / "s1.jsonl").exists()
    with pytest.raises(anthropic.BadRequestError, match="must|required"):
        _client(fake_proxy).post("/v1/messages", body=body, cast_to=object)
    assert _client(fake_proxy, "after").messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])


def test_engine_failure_reaches_the_sdk_as_its_error_and_is_recorded(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.fail_status = 429
    with pytest.raises(anthropic.RateLimitError) as caught:
        _client(fake_proxy).messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.response.headers["Retry-After"] and caught.value.body["error"]["type"] == "rate_limit_error"
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.upstream_status == 429 and not call.ok


def test_stream_cut_by_the_engine_ends_with_an_error_event(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.cut_stream = True
    with pytest.raises(anthropic.APIStatusError, match="closed the connection"):
        with _client(fake_proxy).messages.stream(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]) as stream:
            stream.get_final_message()
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.error and call.stream
