"""The official `openai` SDK's Responses API against the proxy in front of the real dev engine, with tools.

The engine plays TOOL_SCRIPT (conftest): a write_file call, then an answer. Streamed and
plain calls must give the same Response, and the record must hold the tokens of that text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import openai
import pytest

from components.core import read_session
from tests.components.proxy._conversations import RESPONSES_ASK as ASK
from tests.components.proxy._conversations import RESPONSES_WRITE_TOOL as WRITE_TOOL

SYSTEM = {"role": "developer", "content": "You write files."}
CALL = {"type": "function_call", "call_id": "call_1", "name": "write_file", "arguments": '{"path": "notes.txt", "content": "hello"}'}
RESULT = {"type": "function_call_output", "call_id": "call_1", "output": "written"}
CONVERSATIONS = {"tool_call": [SYSTEM, ASK], "answer": [SYSTEM, ASK, CALL, RESULT]}


@pytest.fixture
def engine_proxy(tool_script_engine, make_proxy: Callable[..., str]) -> str:
    return make_proxy(tool_script_engine.url)


def _client(proxy: str, session: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0, timeout=60)


def _request(conversation: str) -> dict[str, Any]:
    return {
        "model": "gpt-codex",
        "input": CONVERSATIONS[conversation],
        "tools": [WRITE_TOOL, {"type": "web_search"}],
        "temperature": 0,
        "store": False,
        "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
    }


def _comparable(response: Any) -> dict[str, Any]:
    """The response without what differs between two calls by design (ids, time) or SDK helper extras."""
    body = response.to_dict()
    for key in ("id", "created_at", "completed_at"):
        body.pop(key)
    for item in body["output"]:
        item.pop("id")
        item.pop("parsed_arguments", None)
        if item["type"] == "function_call":
            item["call_id"] = "<id>"
        for part in item.get("content", ()):
            part.pop("parsed", None)
    return body


@pytest.mark.parametrize("conversation", ["tool_call", "answer"])
def test_streamed_final_response_equals_the_created_response(engine_proxy: str, conversation: str) -> None:
    client = _client(engine_proxy, conversation)
    plain = client.responses.create(**_request(conversation))
    with client.responses.stream(**_request(conversation)) as stream:
        streamed = stream.get_final_response()
    assert _comparable(streamed) == _comparable(plain)
    assert plain.status == "completed"
    if conversation == "tool_call":
        [item] = plain.output
        assert item.type == "function_call" and item.name == "write_file"
        assert json.loads(item.arguments) == {"path": "notes.txt", "content": "hello"}
    else:
        assert plain.output_text == "Wrote notes.txt."


def test_recorded_tokens_decode_to_what_the_client_saw(engine_proxy: str, tmp_path: Path, decode_completion) -> None:
    client = _client(engine_proxy, "tokens")
    with client.responses.stream(**_request("tool_call")) as stream:
        called = stream.get_final_response()
    with client.responses.stream(**_request("answer")) as stream:
        answered = stream.get_final_response()
    tool_call, answer = read_session(tmp_path / "out" / "tokens.jsonl")
    assert tool_call.ok and answer.ok and tool_call.stream and answer.finish_reason == "stop"
    assert decode_completion(answer) == answered.output_text
    inside = decode_completion(tool_call).removeprefix("<tool_call>").removesuffix("</tool_call>")
    assert json.loads(inside) == {"name": "write_file", "arguments": json.loads(called.output[0].arguments)}
    assert tool_call.response["output"][0]["call_id"] == called.output[0].call_id
    sent = answer.translation.upstream_request["messages"]
    assert sent[0] == {"role": "system", "content": "You write files."}
    assert sent[-2]["tool_calls"][0]["id"] == "call_1" and sent[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "written"}
    assert answer.translation.dropped == ["tools[1] (type web_search)"]
    assert len(answer.completion_logprobs) == len(answer.completion_token_ids) and answer.prompt_token_ids
