"""Reasoning reaches each surface in its own field: Messages ``thinking`` blocks, Responses ``reasoning`` items."""

from __future__ import annotations

import json
from typing import Any

from components.proxy.surfaces._messages_response import message_body
from components.proxy.surfaces._messages_stream import MessagesStream
from components.proxy.surfaces._responses_output import response_from_chat
from components.proxy.surfaces._responses_stream import ResponsesStream

MESSAGE = {"role": "assistant", "reasoning": "Think first.", "content": "Four."}
CHAT = {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "message": MESSAGE, "finish_reason": "stop"}]}
CHUNKS = [
    {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"reasoning": "Think "}}]},
    {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"reasoning": "first.", "content": "Fo"}}]},
    {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"content": "ur."}, "finish_reason": "stop"}]},
]


def _events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_messages_put_reasoning_in_a_thinking_block_before_the_text() -> None:
    body = message_body(CHAT, {"model": "m"})
    assert body["content"] == [
        {"type": "thinking", "thinking": "Think first.", "signature": ""},
        {"type": "text", "text": "Four.", "citations": None},
    ]
    stream = MessagesStream({"model": "m"})
    events = _events(b"".join(stream.event(chunk) for chunk in CHUNKS) + stream.end())
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    thinking = "".join(e["delta"]["thinking"] for e in events if e.get("delta", {}).get("type") == "thinking_delta")
    text = "".join(e["delta"]["text"] for e in events if e.get("delta", {}).get("type") == "text_delta")
    assert (starts, thinking, text) == (["thinking", "text"], "Think first.", "Four.")


def test_responses_put_reasoning_in_a_reasoning_item_before_the_message() -> None:
    output = response_from_chat(CHAT, {"model": "m"})["output"]
    assert [item["type"] for item in output] == ["reasoning", "message"]
    assert output[0]["content"] == [{"type": "reasoning_text", "text": "Think first."}]
    stream = ResponsesStream({"model": "m"})
    events = _events(b"".join(stream.event(chunk) for chunk in CHUNKS) + stream.end())
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_text.delta")
    final = events[-1]["response"]["output"]
    assert deltas == "Think first." and [item["type"] for item in final] == ["reasoning", "message"]
    assert final[0]["content"][0]["text"] == "Think first." and final[1]["content"][0]["text"] == "Four."
