"""Hermes tool-call parsing, whole and streamed, as vLLM's hermes parser reads it."""

from __future__ import annotations

import json
from typing import Any

from components.core.tool_calls import StreamingToolParser, extract_tool_calls

TWO_CALLS = (
    'Sure.<tool_call>\n{"name": "read_file", "arguments": {"path": "a {b}.txt", "n": [1, 2]}}\n</tool_call>\n'
    '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>'
)


def test_text_before_the_first_call_is_content_and_arguments_are_json_strings() -> None:
    content, calls = extract_tool_calls(TWO_CALLS)
    assert content == "Sure."
    assert [c["function"]["name"] for c in calls] == ["read_file", "ls"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "a {b}.txt", "n": [1, 2]}
    assert all(c["type"] == "function" and c["id"].startswith("chatcmpl-tool-") for c in calls)


def test_a_call_with_broken_json_leaves_all_text_as_content() -> None:
    text = 'x<tool_call>{"name": "ls", "arguments": {</tool_call>'
    assert extract_tool_calls(text) == (text, [])


def test_text_without_calls_is_unchanged() -> None:
    assert extract_tool_calls("just words") == ("just words", [])


def _stream(text: str, piece: int) -> tuple[str, list[dict[str, Any]]]:
    parser = StreamingToolParser()
    content, deltas = "", []
    for end in range(piece, len(text) + piece, piece):
        new_content, new_deltas = parser.feed(text[:end])
        content += new_content or ""
        deltas += new_deltas
    return content, deltas


def test_streamed_deltas_reassemble_to_the_same_calls() -> None:
    for piece in (1, 3, 7, len(TWO_CALLS)):
        content, deltas = _stream(TWO_CALLS, piece)
        assert content == "Sure."
        names = {d["index"]: d["function"]["name"] for d in deltas if "name" in d.get("function", {})}
        arguments: dict[int, str] = {}
        for d in deltas:
            arguments[d["index"]] = arguments.get(d["index"], "") + d["function"].get("arguments", "")
        assert names == {0: "read_file", 1: "ls"}
        assert json.loads(arguments[0]) == {"path": "a {b}.txt", "n": [1, 2]} and json.loads(arguments[1]) == {}
        announced = [d for d in deltas if "id" in d]
        assert [d["index"] for d in announced] == [0, 1] and all(d["type"] == "function" for d in announced)


def test_a_partial_start_tag_is_held_back_from_content() -> None:
    parser = StreamingToolParser()
    assert parser.feed("Hi <tool_") == ("Hi ", [])
    assert parser.feed("Hi <tool_x") == ("<tool_x", [])
    assert parser.feed("Hi <tool_x <tool") == (" ", [])
    assert parser.feed("Hi <tool_x <tool", final=True) == ("<tool", [])  # the text ended there
