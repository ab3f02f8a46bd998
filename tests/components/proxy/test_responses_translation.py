"""OpenAI Responses through the proxy (fake engine): what the engine is sent, errors, the record."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from components.core import read_session

EXEC = {"type": "function", "name": "exec_command", "description": "Run", "parameters": {"type": "object"}, "strict": False}
NAMESPACE = {
    "type": "namespace",
    "name": "files",
    "description": "File tools",
    "tools": [
        {"type": "function", "name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ],
}
# What Codex CLI sends, trimmed: the system prompt as a developer item, a tool round trip
# (assistant text, then its function_call), a reasoning item, hosted and namespaced tools.
CODEX_BODY = {
    "model": "gpt-codex",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list"}, {"type": "input_file", "file_id": "file_1"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call", "call_id": "call_2", "name": "read", "namespace": "files", "arguments": '{"path":"a"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
        {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "hello"}]},
    ],
    "tools": [EXEC, NAMESPACE, {"type": "web_search"}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "thread-1",
    "max_output_tokens": 32,
}


def _client(proxy: str, session: str = "s1") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0)


def test_codex_request_is_translated_to_chat_and_the_translation_recorded(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    response = httpx.post(f"{fake_proxy}/s/s1/v1/responses", json=CODEX_BODY)
    assert response.status_code == 200, response.text
    sent = fake_engine.requests[-1]
    assert sent["messages"] == [
        {"role": "system", "content": "You are Codex."},
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": "Listing.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd":"ls"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "files__read", "arguments": '{"path":"a"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "call_2", "content": "hello"},
    ]
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["exec_command", "files__read"]
    assert "strict" not in sent["tools"][0]["function"]  # strict would constrain decoding away from the policy
    assert sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is False and sent["max_tokens"] == 32
    for absent in ("reasoning", "store", "include", "prompt_cache_key", "input", "max_output_tokens"):
        assert absent not in sent
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.ok and call.api == "responses" and call.request == CODEX_BODY
    assert call.translation.dropped == [
        "input[1].content[1] (input_file)",
        "input[2] (reasoning)",
        "tools[1].tools[1] (type custom)",
        "tools[2] (type web_search)",
    ]
    assert call.translation.ignored == ["include", "prompt_cache_key", "reasoning", "store", "tools.strict"]
    assert call.translation.mapped == ["input[0] role developer -> system", "tools[1] namespace 'files' -> 1 functions named files__<name>"]
    assert call.response["output"][0]["content"][0]["text"] == fake_engine.TEXT


def test_string_input_and_instructions(fake_proxy: str, fake_engine) -> None:
    reply = _client(fake_proxy).responses.create(model="m", instructions="Be brief.", input="hi")
    assert reply.output_text == fake_engine.TEXT and reply.status == "completed" and reply.model == "m"
    assert reply.usage.input_tokens == 3 and reply.usage.output_tokens == 4 and reply.usage.total_tokens == 7
    assert fake_engine.requests[-1]["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


def test_stream_events_reassemble_to_the_plain_response(fake_proxy: str, tmp_path: Path) -> None:
    client = _client(fake_proxy)
    plain = client.responses.create(model="m", input="hi")
    with client.responses.stream(model="m", input="hi") as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert streamed.output_text == plain.output_text and streamed.usage == plain.usage
    first, second = read_session(tmp_path / "out" / "s1.jsonl")
    assert second.stream and second.response["id"] == streamed.id
    assert second.response["output"][0]["content"] == first.response["output"][0]["content"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("hi", "must be a JSON object, got a string"),
        ({"model": "m"}, "'input' is required"),
        ({"model": "m", "input": 5}, "'input' must be a string or a list"),
        ({"model": "m", "input": [5]}, "'input[0]' must be an object"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "'input[0].role' must be"),
        ({"model": "m", "input": [{"type": "function_call", "name": "f"}]}, "'input[0].call_id' must be a string"),
        ({"model": "m", "input": "hi", "tools": {"type": "function"}}, "'tools' must be an array"),
        ({"model": "m", "input": "hi", "tools": [{"type": "function"}]}, "'tools[0].name' must be a string"),
        ({"model": "m", "input": "hi", "tool_choice": "sometimes"}, "'tool_choice' must be"),
        ({"model": "m", "input": "hi", "max_output_tokens": -1}, "'max_output_tokens' must be a positive integer"),
        ({"model": "m", "input": "hi", "previous_response_id": "resp_1"}, "is not a response this proxy keeps"),
        ({"model": "m", "input": "hi", "conversation": "conv_1"}, "'conversation' is not supported"),
    ],
)
def test_malformed_bodies_get_openai_shaped_400_and_the_proxy_keeps_serving(
    fake_proxy: str, fake_engine, tmp_path: Path, body: object, expected: str
) -> None:
    response = httpx.post(f"{fake_proxy}/s/s1/v1/responses", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and expected in error["message"]
    assert not fake_engine.requests and not (tmp_path / "out" / "s1.jsonl").exists()
    assert _client(fake_proxy, "after").responses.create(model="m", input="hi").output_text


def test_engine_failure_reaches_the_sdk_as_its_error_and_is_recorded(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.fail_status = 429
    with pytest.raises(openai.RateLimitError) as caught:
        _client(fake_proxy).responses.create(model="m", input="hi")
    assert caught.value.response.headers["Retry-After"]  # Codex treats a 429 without it as fatal
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.upstream_status == 429 and not call.ok


def test_stream_cut_by_the_engine_ends_with_response_failed(fake_proxy: str, fake_engine, tmp_path: Path) -> None:
    fake_engine.cut_stream = True
    with _client(fake_proxy).responses.stream(model="m", input="hi") as stream:
        events = list(stream)
    assert events[-1].type == "response.failed" and "closed the connection" in events[-1].response.error.message
    assert events[-1].response.error.code == "server_error"
    [call] = read_session(tmp_path / "out" / "s1.jsonl")
    assert call.error and call.stream
