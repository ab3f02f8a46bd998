"""The official `anthropic` SDK against the proxy in front of the real dev engine, with tools.

The engine plays TOOL_SCRIPT (conftest): a write_file call, then an answer. Streamed and
plain calls must give the same Message, and the record must hold the tokens of that text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import anthropic
import pytest

from components.core import read_session
from tests.components.proxy._conversations import MESSAGES_ASK as ASK
from tests.components.proxy._conversations import MESSAGES_TOOL_RESULT as TOOL_RESULT
from tests.components.proxy._conversations import MESSAGES_TOOL_TURN as TOOL_TURN
from tests.components.proxy._conversations import MESSAGES_WRITE_TOOL as WRITE_TOOL

CONVERSATIONS = {"tool_call": [ASK], "answer": [ASK, TOOL_TURN, TOOL_RESULT]}


@pytest.fixture
def engine_proxy(tool_script_engine, make_proxy: Callable[..., str]) -> str:
    return make_proxy(tool_script_engine.url)


def _client(proxy: str, session: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=f"{proxy}/s/{session}", api_key="unused", max_retries=0, timeout=60)


def _request(conversation: str) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 64,
        "system": [{"type": "text", "text": "You write files.", "cache_control": {"type": "ephemeral"}}],
        "messages": CONVERSATIONS[conversation],
        "tools": [WRITE_TOOL],
        "extra_body": {"temperature": 0},
    }


def _comparable(message: Any) -> dict[str, Any]:
    """The message without what differs between two calls by design (ids) or SDK helper extras."""
    body = message.to_dict()
    body.pop("id")
    for block in body["content"]:
        block.pop("parsed_output", None)
        if block["type"] == "tool_use":
            block["id"] = "<id>"
    return body


@pytest.mark.parametrize("conversation", ["tool_call", "answer"])
def test_streamed_final_message_equals_the_created_message(engine_proxy: str, conversation: str) -> None:
    client = _client(engine_proxy, conversation)
    plain = client.messages.create(**_request(conversation))
    with client.messages.stream(**_request(conversation)) as stream:
        streamed = stream.get_final_message()
    assert _comparable(streamed) == _comparable(plain)
    if conversation == "tool_call":
        [block] = plain.content
        assert plain.stop_reason == "tool_use" and block.type == "tool_use" and block.name == "write_file"
        assert block.input == {"path": "notes.txt", "content": "hello"}
    else:
        assert plain.stop_reason == "end_turn" and plain.content[0].text == "Wrote notes.txt."


def test_recorded_tokens_decode_to_what_the_client_saw(engine_proxy: str, tmp_path: Path, decode_completion) -> None:
    client = _client(engine_proxy, "tokens")
    with client.messages.stream(**_request("tool_call")) as stream:
        called = stream.get_final_message()
    with client.messages.stream(**_request("answer")) as stream:
        answered = stream.get_final_message()
    tool_call, answer = read_session(tmp_path / "out" / "tokens.jsonl")
    assert tool_call.ok and answer.ok and tool_call.stream and answer.finish_reason == "stop"
    assert decode_completion(answer) == answered.content[0].text
    inside = decode_completion(tool_call).removeprefix("<tool_call>").removesuffix("</tool_call>")
    assert json.loads(inside) == {"name": "write_file", "arguments": called.content[0].input}
    assert tool_call.response["content"][0]["input"] == called.content[0].input
    sent = answer.translation.upstream_request["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "toolu_1", "content": "written"}
    assert len(answer.completion_logprobs) == len(answer.completion_token_ids) and answer.prompt_token_ids
