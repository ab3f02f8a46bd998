"""The token path reads answers with the engine's configured formats: one answer whichever path served a call.

A scripted dev engine writes a Qwen3-Coder XML tool call (not hermes) and reasoning; the
proxy, configured like the engine, serves the echoed turn from the engine's text
completion and must give the answer the engine's own chat endpoint gives. A harness
that sends that answer back without its reasoning still continues the row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import httpx
import openai
import pytest

from components.core import read_session

TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {
    "dir": {"type": "string"}, "depth": {"type": "integer"}}}}}]  # fmt: skip
CALL = "<think>\nList it.\n</think>\n\n<tool_call>\n<function=ls>\n<parameter=dir>\n/tmp\n</parameter>\n<parameter=depth>\n2\n</parameter>\n</function>\n</tool_call>"
SCRIPT = {"turns": [{"content": "Hello."}, {"content": CALL}, {"content": "Done."}]}
USER = {"role": "user", "content": "list /tmp"}
FLAGS = ("--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3")


@pytest.fixture(scope="module")
def coder_engine(make_dev_engine: Callable[..., Any]) -> Any:
    return make_dev_engine(script=SCRIPT, args=FLAGS)


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base, api_key="unused", max_retries=0)


def _answer(message: Any) -> dict[str, Any]:
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]
    return {"content": message.content, "reasoning": getattr(message, "reasoning", None), "calls": calls}


@pytest.mark.parametrize("stream", [False, True])
def test_the_token_path_answers_as_the_engines_chat_endpoint(
    coder_engine: Any, make_proxy: Callable[..., str], tmp_path: Path, stream: bool
) -> None:
    proxy = make_proxy(coder_engine.url, training=True, tool_call_parser="qwen3_coder", reasoning_parser="qwen3")
    via_proxy = _client(f"{proxy}/s/s1/v1")
    first = via_proxy.chat.completions.create(model="m", messages=[USER], tools=TOOLS).choices[0].message
    history = [USER, {"role": "assistant", "content": first.content}, {"role": "user", "content": "go on"}]
    direct = _client(f"{coder_engine.url}/v1").chat.completions.create(model=None, messages=history, tools=TOOLS)
    expected = _answer(direct.choices[0].message)
    assert expected == {"content": None, "reasoning": "\nList it.\n", "calls": [("ls", {"dir": "/tmp", "depth": 2})]}
    if stream:
        got = _streamed(via_proxy, history)
    else:
        got = _answer(via_proxy.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message)
    assert got == expected
    token_call = read_session(tmp_path / "out" / "s1.jsonl")[-1]
    assert token_call.provenance.path == "tokens"


def _streamed(client: openai.OpenAI, history: list[dict[str, Any]]) -> dict[str, Any]:
    reasoning, content, names, arguments = "", "", {}, {}
    for chunk in client.chat.completions.create(model="m", messages=history, tools=TOOLS, stream=True):
        for choice in chunk.choices:
            delta = choice.delta
            reasoning += getattr(delta, "reasoning", None) or ""
            content += delta.content or ""
            for call in delta.tool_calls or ():
                if call.function and call.function.name:
                    names[call.index] = call.function.name
                if call.function and call.function.arguments:
                    arguments[call.index] = arguments.get(call.index, "") + call.function.arguments
    calls = [(names[i], json.loads(arguments.get(i, "{}"))) for i in sorted(names)]
    return {"content": content.strip() or None, "reasoning": reasoning or None, "calls": calls}


def test_an_answer_echoed_without_its_thinking_continues_the_row_with_the_sampled_thinking(
    coder_engine: Any, make_proxy: Callable[..., str], tmp_path: Path
) -> None:
    proxy = make_proxy(coder_engine.url, training=True, tool_call_parser="qwen3_coder", reasoning_parser="qwen3")
    client = _client(f"{proxy}/s/think/v1")
    history: list[dict[str, Any]] = [USER]
    first = client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message
    history += [{"role": "assistant", "content": first.content}, {"role": "user", "content": "go on"}]
    reply = client.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message
    assert reply.reasoning and reply.tool_calls, "the scripted turn reasons, then calls a tool"
    # The harness keeps the visible answer only, as most do: no reasoning field.
    calls = [{"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in reply.tool_calls]  # fmt: skip
    history += [{"role": "assistant", "content": reply.content, "tool_calls": calls},
                {"role": "tool", "tool_call_id": calls[0]["id"], "content": "a b"}]  # fmt: skip
    client.chat.completions.create(model="m", messages=history, tools=TOOLS)

    *_, thinking, after = read_session(tmp_path / "out" / "think.jsonl")
    assert after.provenance.path == "tokens" and after.provenance.continues_call == thinking.call_index
    sampled = [*thinking.prompt_token_ids, *thinking.completion_token_ids]
    assert after.prompt_token_ids[: len(sampled)] == sampled, "the row continues through the sampled thinking"
    body = {"model": coder_engine.model, "prompt": "List it.", "add_special_tokens": False}
    think_ids = httpx.post(f"{coder_engine.url}/tokenize", json=body).json()["tokens"]
    assert _contains(thinking.completion_token_ids, think_ids), "the sampled completion holds the thinking"


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i : i + len(part)] == part for i in range(len(ids) - len(part) + 1))
