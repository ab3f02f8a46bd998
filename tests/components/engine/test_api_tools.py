"""Scripted mode: forced turns come back as real tool calls with the model's own logprobs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._servers import EngineServer
from tests.components.engine.conftest import WEATHER_TOOL, openai_client

SCRIPT = {
    "turns": [
        {"content": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"content": "All done."},
    ]
}
USER = {"role": "user", "content": "What does the README say?"}
TRACE = {"return_token_ids": True}


@pytest.fixture(scope="module")
def scripted(make_dev_engine: Callable[..., EngineServer]) -> EngineServer:
    return make_dev_engine(SCRIPT)


@pytest.fixture(scope="module")
def scripted_client(scripted: EngineServer) -> Any:
    return openai_client(scripted)


def _after_tool_call(call_id: str = "call_1") -> list[dict[str, Any]]:
    return [
        USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "README.md"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "# OpenForge"},
    ]


def test_first_turn_is_a_parsed_tool_call_with_real_logprobs(
    scripted: EngineServer,
    scripted_client: Any,
    tiny_model_dir: Path,
    rescore: Callable[[list[int], list[int]], list[float]],
) -> None:
    from transformers import AutoTokenizer

    resp = scripted_client.chat.completions.create(
        model=scripted.model, messages=[USER], tools=[WEATHER_TOOL], logprobs=True, extra_body=TRACE
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "README.md"}
    text = AutoTokenizer.from_pretrained(tiny_model_dir).decode(choice.token_ids)
    assert text == '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call><|im_end|>'
    engine = [entry.logprob for entry in choice.logprobs.content]
    expected = rescore(resp.prompt_token_ids, choice.token_ids)
    assert max(abs(a - b) for a, b in zip(engine, expected, strict=True)) < 1e-4


def test_next_turn_follows_the_script_after_the_tool_result(scripted: EngineServer, scripted_client: Any) -> None:
    resp = scripted_client.chat.completions.create(model=scripted.model, messages=_after_tool_call(), tools=[WEATHER_TOOL])
    assert resp.choices[0].message.content == "All done."
    assert resp.choices[0].finish_reason == "stop" and not resp.choices[0].message.tool_calls


def test_streamed_tool_call_deltas_reassemble_to_the_call(scripted: EngineServer, scripted_client: Any) -> None:
    chunks = list(
        scripted_client.chat.completions.create(
            model=scripted.model, messages=[USER], tools=[WEATHER_TOOL], stream=True, extra_body=TRACE
        )
    )
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id and deltas[0].type == "function" and deltas[0].function.name == "read_file"
    assert {d.index for d in deltas} == {0}
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {"path": "README.md"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert sum(len(c.choices[0].token_ids) for c in chunks[1:]) > 0


def test_past_the_last_turn_the_model_generates_freely(scripted: EngineServer, scripted_client: Any) -> None:
    messages = [*_after_tool_call(), {"role": "assistant", "content": "All done."}, {"role": "user", "content": "More?"}]
    resp = scripted_client.chat.completions.create(model=scripted.model, messages=messages, max_tokens=5, temperature=0)
    assert resp.usage.completion_tokens <= 5 and resp.choices[0].message.content != "All done."


def test_without_tools_in_the_request_the_call_stays_text(scripted: EngineServer, scripted_client: Any) -> None:
    resp = scripted_client.chat.completions.create(model=scripted.model, messages=[USER])
    assert resp.choices[0].message.content.startswith("<tool_call>") and resp.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("turn", [0, 1])
def test_token_id_prompt_of_a_chat_plays_the_same_scripted_turn(
    scripted: EngineServer, scripted_client: Any, turn: int
) -> None:
    # The recording proxy sends the rendered conversation as token ids to keep the ids the
    # policy sampled; a scripted engine must play the turn the chat endpoint would, tool
    # calls resolved against the tools read back from the prompt.
    messages = [USER] if turn == 0 else _after_tool_call()
    chat = scripted_client.chat.completions.create(
        model=scripted.model, messages=messages, tools=[WEATHER_TOOL], extra_body=TRACE
    )
    text = scripted_client.completions.create(
        model=scripted.model, prompt=chat.prompt_token_ids, max_tokens=64, extra_body=TRACE
    )
    assert text.choices[0].model_extra["token_ids"] == chat.choices[0].token_ids
    assert text.choices[0].finish_reason == "stop"
