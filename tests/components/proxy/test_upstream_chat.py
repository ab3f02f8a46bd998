"""Unit tests for the engine-side helpers: request preparation, SSE parsing, stream reassembly."""

from __future__ import annotations

from components.core.sampling import NEUTRAL_SAMPLING
from components.proxy.sse import SSEParser, sse_event
from components.proxy.upstream_chat import ChatStreamAssembler, extract_completion, prepare_upstream_body


def test_upstream_body_asks_for_tokens_and_keeps_client_top_logprobs() -> None:
    request = {"model": "gpt-x", "messages": [], "top_logprobs": 3, "logprobs": False}
    body, sampling = prepare_upstream_body(request, model="policy", training=False, stream=False)
    assert body["model"] == "policy"
    assert body["return_token_ids"] is True and body["logprobs"] is True
    assert body["skip_special_tokens"] is False and body["top_logprobs"] == 3
    assert "stream_options" not in body  # engines refuse stream_options on non-streamed calls
    assert request["logprobs"] is False  # the recorded request stays as the client sent it
    assert sampling["overridden"] is False


def test_streamed_upstream_body_adds_usage_and_keeps_client_stream_options() -> None:
    body, _ = prepare_upstream_body(
        {"messages": [], "stream_options": {"continuous_usage_stats": True}}, model=None, training=False, stream=True
    )
    assert body["stream_options"] == {"continuous_usage_stats": True, "include_usage": True}
    assert "model" not in body


def test_training_mode_sends_every_distribution_knob_at_its_neutral_value() -> None:
    # Sent explicitly, not left out: an engine default (a checkpoint's top_k 20) cannot slip in.
    request = {
        "messages": [], "temperature": 0.2, "top_p": 0.5, "top_k": 5, "max_tokens": 9, "stop": "END",
        "repetition_penalty": 1.0, "logit_bias": {"7": 3},
    }  # fmt: skip
    body, sampling = prepare_upstream_body(request, model=None, training=True, stream=False)
    assert {knob: body[knob] for knob in NEUTRAL_SAMPLING} == NEUTRAL_SAMPLING
    assert "logit_bias" not in body
    assert sampling == {
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 9,
        "seed": None,
        "stop": ["END"],
        "overridden": True,
        "top_k": -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "dropped": ["temperature", "top_p", "top_k", "logit_bias"],  # repetition_penalty was already neutral
    }


def test_sampling_record_ignores_malformed_values() -> None:
    _, sampling = prepare_upstream_body(
        {"messages": [], "temperature": "hot", "max_tokens": True, "stop": [1, 2]}, model=None, training=False, stream=False
    )
    assert sampling["temperature"] is None and sampling["max_tokens"] is None and sampling["stop"] is None


def test_sse_parser_handles_events_split_across_reads_and_crlf() -> None:
    parser = SSEParser()
    stream = sse_event(b'{"a": 1}') + b": keep-alive\r\n\r\n" + b"data: {\"b\":\r\ndata: 2}\r\n\r\n" + sse_event(b"[DONE]")
    events = []
    for position in range(0, len(stream), 3):  # worst case: tiny reads that cut everything
        events.extend(parser.feed(stream[position : position + 3]))
    events.extend(parser.close())
    assert events == [b'{"a": 1}', b'{"b":\n2}', b"[DONE]"]


def test_sse_parser_returns_last_event_without_blank_line_on_close() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == [b"[DONE]"]


def _chunk(delta: dict, **choice) -> dict:
    return {"id": "c1", "created": 1, "model": "m", "choices": [{"index": 0, "delta": delta, **choice}]}


def test_assembler_merges_tool_call_deltas_by_index() -> None:
    assembler = ChatStreamAssembler()
    assembler.add({**_chunk({"role": "assistant", "content": None}), "prompt_token_ids": [1, 2]})
    assembler.add(_chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "ls", "arguments": ""}}]}, token_ids=[5]))
    assembler.add(_chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "cat", "arguments": '{"p'}}]}, token_ids=[6]))
    assembler.add(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"dir": "."}'}}]}, token_ids=[7]))
    assembler.add(_chunk({"tool_calls": [{"index": 1, "function": {"arguments": '": "x"}'}}]}, token_ids=[8], finish_reason="tool_calls"))
    completion = assembler.completion()
    message = completion["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {"id": "call_a", "type": "function", "function": {"name": "ls", "arguments": '{"dir": "."}'}},
        {"id": "call_b", "type": "function", "function": {"name": "cat", "arguments": '{"p": "x"}'}},
    ]
    assert completion["choices"][0]["token_ids"] == [5, 6, 7, 8]
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    assert completion["prompt_token_ids"] == [1, 2]
    assert assembler.finished


def test_assembler_joins_text_and_logprobs_and_keeps_usage() -> None:
    assembler = ChatStreamAssembler()
    entry = {"token": "a", "logprob": -1.0, "bytes": [97], "top_logprobs": []}
    assembler.add(_chunk({"content": "a", "reasoning_content": "th"}, logprobs={"content": [entry]}, token_ids=[1]))
    assembler.add(_chunk({"content": "b", "reasoning_content": "ink"}, logprobs={"content": [entry]}, token_ids=[2], finish_reason="stop", stop_reason=None))
    assembler.add({"id": "c1", "choices": [], "usage": {"total_tokens": 4}})
    completion = assembler.completion()
    choice = completion["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "ab", "reasoning_content": "think"}
    assert choice["logprobs"] == {"content": [entry, entry]} and "stop_reason" in choice
    assert completion["usage"] == {"total_tokens": 4}
    extracted = extract_completion(completion)
    assert (extracted.completion_token_ids, extracted.completion_logprobs) == ([1, 2], [-1.0, -1.0])
    assert extracted.problem is None


def test_assembler_records_an_in_stream_error() -> None:
    assembler = ChatStreamAssembler()
    assembler.add({"error": {"message": "out of memory", "type": "InternalServerError"}})
    assert assembler.error is not None and "out of memory" in assembler.error


def test_extract_completion_flags_mismatched_logprobs_and_keeps_record_valid() -> None:
    chat = {"choices": [{"token_ids": [1, 2], "logprobs": {"content": [{"logprob": -1.0}]}, "finish_reason": "stop"}]}
    completion = extract_completion(chat)
    assert completion.problem is not None and "1 logprobs for 2 tokens" in completion.problem
    assert completion.completion_logprobs == []


def test_extract_completion_flags_an_engine_without_token_ids() -> None:
    completion = extract_completion({"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]})
    assert completion.problem is not None and "return_token_ids" in completion.problem


def test_extract_completion_flags_logprob_entries_without_a_number() -> None:
    # JSON true decodes to bool, an int subclass: it must not pass for a logprob.
    for bad in ({"logprob": True}, {"logprob": None}, {"token": "x"}, "x", None):
        chat = {"choices": [{"token_ids": [1, 2], "logprobs": {"content": [{"logprob": -1.0}, bad]}, "finish_reason": "stop"}]}
        completion = extract_completion(chat)
        assert completion.problem == "upstream logprobs entries have no numeric 'logprob'", bad
        assert completion.completion_logprobs == []
    ok = extract_completion({"choices": [{"token_ids": [1, 2], "logprobs": {"content": [{"logprob": -1.0}, {"logprob": 0}]}}]})
    assert ok.problem is None and ok.completion_logprobs == [-1.0, 0]


def test_a_call_seed_depends_on_session_attempt_and_turn_but_not_on_message_text() -> None:
    from components.proxy.upstream_chat import call_seed

    two = {"messages": [{"role": "user", "content": "in /tmp/a"}, {"role": "assistant", "content": "x"}]}
    moved = {"messages": [{"role": "user", "content": "in /tmp/b"}, {"role": "assistant", "content": "y"}]}
    seeds = {
        call_seed("0", "task-s0", 0, two),
        call_seed("0", "task-s1", 0, two),
        call_seed("0", "task-s0", 1, two),
        call_seed("0", "task-s0", 0, {"messages": two["messages"][:1]}),
        call_seed("1", "task-s0", 0, two),
    }
    assert len(seeds) == 5 and all(0 <= s < 2**31 for s in seeds)
    assert call_seed("0", "task-s0", 0, moved) == call_seed("0", "task-s0", 0, two)


def test_training_mode_seeds_calls_the_harness_left_unseeded() -> None:
    body, sampling = prepare_upstream_body({"messages": []}, model=None, training=True, stream=False, seed=7)
    assert body["seed"] == 7 and sampling["seed"] == 7
    body, _ = prepare_upstream_body({"messages": [], "seed": 3}, model=None, training=True, stream=False, seed=7)
    assert body["seed"] == 3  # the harness's own seed is kept
    body, _ = prepare_upstream_body({"messages": []}, model=None, training=False, stream=False, seed=7)
    assert "seed" not in body  # serving mode changes no sampling


def test_a_teacher_is_asked_for_its_answer_only() -> None:
    """Fields only vLLM-style engines take would make another API refuse the call."""
    request = {
        "messages": [{"role": "user", "content": "hi"}], "temperature": 0.3, "top_k": 20, "return_token_ids": True,
        "skip_special_tokens": False, "stop_token_ids": [7], "tools": [], "max_tokens": 50,
    }  # fmt: skip
    body, sampling = prepare_upstream_body(request, model="teacher-model", training=False, stream=False, teacher=True)

    assert body == {"messages": request["messages"], "temperature": 0.3, "tools": [], "max_tokens": 50, "model": "teacher-model"}
    assert sampling["temperature"] == 0.3 and not sampling["overridden"]
    assert extract_completion({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}, text_only=True).problem is None
    assert "token ids" in extract_completion({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}).problem
