"""The Responses stream translator on engine chunks: event order, namespaced tools, the final body."""

from __future__ import annotations

from typing import Any

import orjson

from components.proxy.sse import SSEParser
from components.proxy.surfaces.responses import ResponsesSurface
from components.proxy.upstream_chat import ChatStreamAssembler

REQUEST = {
    "model": "gpt-codex",
    "input": "go",
    "tools": [{"type": "namespace", "name": "files", "description": "", "tools": [{"type": "function", "name": "read"}]}],
}
HEAD = {"id": "chatcmpl-abc", "object": "chat.completion.chunk", "created": 1700000000, "model": "policy"}


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {**HEAD, "choices": choices, **extra}


def _call(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        call.update(id=f"call-{index}", type="function", function={"name": name, "arguments": arguments})
    return {"tool_calls": [call]}


CHUNKS = [
    _chunk({"role": "assistant", "content": ""}, prompt_token_ids=[1, 2, 3]),
    _chunk({"content": "Reading "}),
    _chunk({"content": "both."}),
    _chunk(_call(0, "", name="files__read")),
    _chunk(_call(0, '{"path": "a"}')),
    _chunk(_call(1, '{"path": "b"}', name="files__read")),
    _chunk({}, finish="tool_calls"),
    _chunk(usage={"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}),
]


def _events(chunks: list[dict[str, Any]], *, end: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events the client gets, and the response the record would hold."""
    surface, assembler = ResponsesSurface(), ChatStreamAssembler()
    translator = surface.stream(REQUEST)
    raw = b""
    for chunk in chunks:
        assembler.add(chunk)
        raw += translator.event(chunk)
    raw += translator.end() if end else b""
    events = [orjson.loads(data) for data in SSEParser().feed(raw)]
    return events, surface.to_client(assembler.completion(), REQUEST)


def test_stream_events_come_in_order_with_consecutive_sequence_numbers() -> None:
    events, _ = _events(CHUNKS)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    kinds = [e["type"] for e in events]
    assert kinds[:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds.index("response.output_item.done") < kinds.index("response.function_call_arguments.delta")
    assert kinds.count("response.output_item.done") == 3 and kinds[-1] == "response.completed"


def test_completed_response_equals_the_recorded_one_and_maps_namespaces_back() -> None:
    events, recorded = _events(CHUNKS)
    final = events[-1]["response"]
    # completed_at is read from the clock when each is built, a few microseconds apart.
    assert abs(final.pop("completed_at") - recorded.pop("completed_at")) <= 1
    assert final == recorded
    message, first, second = final["output"]
    assert message["content"][0]["text"] == "Reading both."
    assert (first["namespace"], first["name"], first["arguments"], first["call_id"]) == ("files", "read", '{"path": "a"}', "call-0")
    assert second["arguments"] == '{"path": "b"}' and second["id"] != first["id"]
    assert final["usage"]["input_tokens"] == 3 and final["usage"]["output_tokens"] == 9


def test_answer_cut_by_the_token_limit_ends_incomplete() -> None:
    chunks = [_chunk({"content": "Hel"}), _chunk({"content": "lo"}, finish="length")]
    events, recorded = _events(chunks)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"} == recorded["incomplete_details"]


def test_upstream_error_chunk_becomes_response_failed_and_nothing_follows() -> None:
    events, _ = _events([_chunk({"content": "Hel"}), {"error": {"message": "out of memory"}}])
    assert [e["type"] for e in events][-1] == "response.failed"
    assert "out of memory" in events[-1]["response"]["error"]["message"]
