"""Token provenance's parts without servers: splicing, finding an echoed answer, text completions as chat."""

from __future__ import annotations

import copy
import json
from array import array
from typing import Any

import pytest

from components.core.parsers import ChatParsers
from components.proxy.provenance._completions import CompletionAsChat, chat_only, completions_body
from components.proxy.provenance._memory import (
    EDITED_HISTORY,
    UNKNOWN_ANSWER,
    AnswerMemory,
    Sampled,
    answer_digest,
    context_digests,
)
from components.proxy.provenance._splice import NOT_A_PREFIX, UNCLOSED_TURN, closing_ids, splice
from components.proxy.surfaces import ChatSurface, MessagesSurface, ResponsesSurface
from components.proxy.upstream_chat import ChatStreamAssembler

EOT, NL = 90, 91  # a template's end-of-turn token and the newline it writes after it
CLOSING = [EOT, NL]


def _sampled(completion: list[int], prompt: list[int] | None = None, context: str = "ctx") -> Sampled:
    return Sampled(3, context, array("i", prompt or [1, 2, 3]), array("i", completion))


# -- splice -------------------------------------------------------------------------------


def test_splice_puts_the_sampled_ids_where_the_template_re_rendered_the_answer() -> None:
    through = [1, 2, 3, 70, 80, EOT, NL]  # the re-rendered answer (70, 80) tokenizes differently
    whole = [*through, 5, 6, 9]
    assert splice(_sampled([7, 8, EOT]), CLOSING, through, whole) == [1, 2, 3, 7, 8, EOT, NL, 5, 6, 9]


def test_a_cut_off_answer_gets_the_whole_closing_the_template_writes() -> None:
    through = [1, 2, 3, 70, EOT, NL]
    assert splice(_sampled([7, 8]), CLOSING, through, [*through, 5]) == [1, 2, 3, 7, 8, EOT, NL, 5]


def test_a_template_that_renders_the_history_differently_later_is_refused() -> None:
    through = [1, 2, 3, 70, EOT, NL]
    assert splice(_sampled([7, EOT]), CLOSING, through, [1, 2, 3, 71, EOT, NL, 5]) == NOT_A_PREFIX
    assert splice(_sampled([7, EOT]), CLOSING, through, through[:-1]) == NOT_A_PREFIX


def test_an_answer_the_template_closes_unlike_others_is_refused() -> None:
    through = [1, 2, 3, 70, NL]
    assert splice(_sampled([7, EOT]), CLOSING, through, [*through, 5]) == UNCLOSED_TURN


@pytest.mark.parametrize(
    ("through", "expected"),
    [
        ([1, 2, 50, 60, EOT, NL], CLOSING),
        ([1, 2, 99, 50, 60, EOT, NL], CLOSING),  # text the template puts before the content
        ([1, 2, 50, 60], []),  # a template that writes nothing after the content
        ([1, 3, 50, 60, EOT, NL], None),  # the prompt is not a prefix: the probe does not line up
        ([1, 2, 51, 60, EOT, NL], None),  # the content tokenized differently in context
    ],
)
def test_closing_is_what_follows_the_probe_content(through: list[int], expected: list[int] | None) -> None:
    assert closing_ids([1, 2], through, [50, 60]) == expected


# -- finding an echoed answer -------------------------------------------------------------

ENGINE_ANSWER: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "policy",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Let me look.\n",
                "tool_calls": [
                    {
                        "id": "chatcmpl-tool-1",
                        "type": "function",
                        "function": {"name": "Bash", "arguments": '{"command": "ls -la", "timeout": 5}'},
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12},
}
TOOLS_MESSAGES = [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
TOOLS_RESPONSES = [{"type": "function", "name": "Bash", "parameters": {"type": "object"}}]


def _messages_echo(answer: dict[str, Any]) -> dict[str, Any]:
    request = {"model": "claude", "max_tokens": 64, "tools": TOOLS_MESSAGES}
    request["messages"] = [{"role": "user", "content": "go"}]
    message = MessagesSurface().to_client(copy.deepcopy(answer), request)
    request["messages"] += [
        {"role": "assistant", "content": message["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message["content"][1]["id"],
                                      "content": "x"}]},  # fmt: skip
    ]
    return request


def _responses_echo(answer: dict[str, Any]) -> dict[str, Any]:
    request = {"model": "codex", "tools": TOOLS_RESPONSES, "input": [{"role": "user", "content": "go"}]}
    response = ResponsesSurface().to_client(copy.deepcopy(answer), request)
    request["input"] += [
        {"type": "message", "role": "assistant", "content": response["output"][0]["content"]},
        {k: v for k, v in response["output"][1].items() if k in ("type", "call_id", "name", "arguments")},
        {"type": "function_call_output", "call_id": response["output"][1]["call_id"], "output": "x"},
    ]
    return request


def _chat_echo(answer: dict[str, Any]) -> dict[str, Any]:
    message = ChatSurface().to_client(copy.deepcopy(answer), {})["choices"][0]["message"]
    call = message["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "x"}
    return {"messages": [{"role": "user", "content": "go"}, message, result]}


@pytest.mark.parametrize(
    ("surface", "echo"),
    [(ChatSurface(), _chat_echo), (MessagesSurface(), _messages_echo), (ResponsesSurface(), _responses_echo)],
    ids=["chat", "messages", "responses"],
)
def test_each_apis_echo_of_an_answer_is_found_by_the_engines_message(surface: Any, echo: Any) -> None:
    chat, _ = surface.to_upstream(echo(ENGINE_ANSWER))
    [assistant] = [m for m in chat["messages"] if m["role"] == "assistant"]
    assert answer_digest(assistant) == answer_digest(ENGINE_ANSWER["choices"][0]["message"])


def test_answer_digest_ignores_whitespace_around_text_argument_spacing_and_call_ids() -> None:
    message = ENGINE_ANSWER["choices"][0]["message"]
    trimmed = {
        "role": "assistant",
        "content": [{"type": "text", "text": "  Let me look."}],
        "tool_calls": [{"id": "other", "function": {"name": "Bash", "arguments": '{"timeout":5,"command":"ls -la"}'}}],
    }
    assert answer_digest(trimmed) == answer_digest(message)
    edited = copy.deepcopy(message)
    edited["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": "ls"})
    assert answer_digest(edited) != answer_digest(message)


def test_context_digests_cover_each_prefix_and_the_tools() -> None:
    body = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "tools": [{"t": 1}]}
    digests = context_digests(body)
    assert len(digests) == 3 and len(set(digests)) == 3
    assert context_digests({**body, "messages": body["messages"][:1]}) == digests[:2]
    assert context_digests({**body, "tools": None})[1] != digests[1]


def test_memory_says_whether_the_answer_is_unknown_or_its_history_changed() -> None:
    memory = AnswerMemory()
    sampled = _sampled([7, EOT], context="before")
    memory.remember("s1", "answer", sampled)
    assert memory.find("s1", "answer", "before") is sampled
    assert memory.find("s1", "answer", "edited") == EDITED_HISTORY
    assert memory.find("s1", "other", "before") == UNKNOWN_ANSWER
    assert memory.find("s2", "answer", "before") == UNKNOWN_ANSWER


def test_memory_keeps_the_latest_answers_of_the_latest_sessions() -> None:
    memory = AnswerMemory(per_session=2, sessions=2)
    for index in range(3):
        memory.remember("s1", f"a{index}", _sampled([index]))
    assert memory.find("s1", "a0", "ctx") == UNKNOWN_ANSWER and isinstance(memory.find("s1", "a2", "ctx"), Sampled)
    memory.remember("s2", "a", _sampled([1]))
    memory.remember("s3", "a", _sampled([1]))
    assert memory.find("s1", "a2", "ctx") == UNKNOWN_ANSWER and isinstance(memory.find("s3", "a", "ctx"), Sampled)


# -- text completions as chat --------------------------------------------------------------

TOOL = {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}
CHAT = {"model": "policy", "messages": [], "tools": [TOOL], "max_tokens": 64, "temperature": 1.0, "top_p": 1.0,
        "logprobs": True, "return_token_ids": True, "skip_special_tokens": False}  # fmt: skip
PIECES = ["Let me", " look.\n", "<tool_call>", '\n{"name": "Bash", "arguments": {"command": "ls"}}', "\n</tool_call>"]
PIECES.append("")  # the end-of-turn token's text
TOKENS = [11, 12, 13, 14, 15, EOT]


def _choice(position: int) -> dict[str, Any]:
    last = position == len(PIECES) - 1
    piece, logprob = PIECES[position], -0.5 - position
    logprobs = {"tokens": [piece], "token_logprobs": [logprob], "top_logprobs": [{piece: logprob}], "text_offset": [0]}
    choice = {"index": 0, "text": PIECES[position], "logprobs": logprobs, "finish_reason": "stop" if last else None,
              "stop_reason": None, "token_ids": [TOKENS[position]]}  # fmt: skip
    if position == 0:
        choice["prompt_token_ids"] = [1, 2, 3]
    return choice


def _head() -> dict[str, Any]:
    return {"id": "cmpl-7", "object": "text_completion", "created": 5, "model": "policy"}


def test_completions_body_keeps_the_chat_sampling_and_asks_for_an_open_limit() -> None:
    body = completions_body({**CHAT, "max_tokens": None, "stop": ["x"], "seed": 3}, [1, 2])
    assert body["prompt"] == [1, 2] and body["max_tokens"] is None and body["logprobs"] == 0
    assert body["stop"] == ["x"] and body["seed"] == 3 and body["return_token_ids"] is True
    assert "messages" not in body and "tools" not in body


@pytest.mark.parametrize(
    "change",
    [{"tool_choice": "required"}, {"tool_choice": {"type": "function", "function": {"name": "Bash"}}},
     {"response_format": {"type": "json_object"}}, {"continue_final_message": True}],  # fmt: skip
)
def test_requests_only_the_chat_endpoint_can_serve_say_why(change: dict[str, Any]) -> None:
    assert chat_only({**CHAT, **change}) is not None
    assert chat_only({**CHAT, "tool_choice": "auto"}) is None


def test_streamed_and_whole_text_completions_become_the_same_chat_answer() -> None:
    whole_completion = {
        **_head(),
        "choices": [{**_choice(0), "text": "".join(PIECES), "token_ids": TOKENS, "finish_reason": "stop",
                     "logprobs": {"tokens": PIECES, "token_logprobs": [-0.5 - i for i in range(6)],
                                  "top_logprobs": [{p: -0.5 - i} for i, p in enumerate(PIECES)],
                                  "text_offset": [0] * 6}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9},
    }  # fmt: skip
    whole = CompletionAsChat(CHAT, [1, 2, 3], ChatParsers()).answer(whole_completion)
    streamed = CompletionAsChat(CHAT, [1, 2, 3], ChatParsers())
    assembler = ChatStreamAssembler()
    for position in range(len(PIECES)):
        for chunk in streamed.chunks({**_head(), "choices": [_choice(position)]}):
            assert chunk["object"] == "chat.completion.chunk"
            assembler.add(chunk)
    for chunk in streamed.chunks({**_head(), "choices": [], "usage": whole_completion["usage"]}):
        assembler.add(chunk)
    assembled = assembler.completion()
    for answer in (whole, assembled):
        choice = answer["choices"][0]
        assert choice["message"]["content"] == "Let me look.\n"
        [call] = choice["message"]["tool_calls"]
        assert call["function"]["name"] == "Bash" and json.loads(call["function"]["arguments"]) == {"command": "ls"}
        assert choice["finish_reason"] == "tool_calls" and choice["token_ids"] == TOKENS
        assert [entry["logprob"] for entry in choice["logprobs"]["content"]] == [-0.5 - i for i in range(6)]
        assert answer["prompt_token_ids"] == [1, 2, 3] and answer["id"] == "chatcmpl-7"
    assert assembled["usage"] == whole["usage"]
