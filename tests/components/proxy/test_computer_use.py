"""Computer-use tools through the proxy (fake engine): function tools for the engine, the API's own shapes back.

Stagehand's Responses mode declares ``computer_use_preview`` and continues with
``previous_response_id`` and a ``computer_call_output``; its Anthropic mode declares
``computer_20250124`` and answers ``tool_use`` blocks with screenshots in ``tool_result``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from components.core import read_session, rebuild_request, rebuild_upstream_request
from components.proxy.surfaces._computer import ANTHROPIC_SCHEMAS, RESPONSES_ACTION_SCHEMA
from components.proxy.surfaces._responses_request import to_chat
from tests.components.proxy._images import b64, data_url, png

SCREEN_1 = png(40, 30, color=(10, 20, 30))
SCREEN_2 = png(40, 30, color=(40, 50, 60))
CLICK = {"type": "click", "button": "left", "x": 120, "y": 48}
PREVIEW_TOOL = {"type": "computer_use_preview", "display_width": 1280, "display_height": 800, "environment": "browser"}
FIRST = {
    "model": "openforge-policy",
    "tools": [PREVIEW_TOOL],
    "input": [
        {"role": "system", "content": "You drive a browser."},
        {"role": "user", "content": [{"type": "input_text", "text": "Register."}, {"type": "input_image", "image_url": data_url(SCREEN_1), "detail": "high"}]},
    ],
    "truncation": "auto",
}  # fmt: skip


def _post(proxy: str, route: str, body: dict[str, Any], session: str = "cu") -> dict[str, Any]:
    response = httpx.post(f"{proxy}/s/{session}/v1/{route}", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _events(proxy: str, route: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", f"{proxy}/s/cu/v1/{route}", json={**body, "stream": True}, timeout=30) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [json.loads(line.removeprefix("data: ")) for line in lines if line != "data: [DONE]"]


def test_computer_use_preview_reaches_the_engine_as_a_function_and_its_call_returns_as_a_computer_call(
    fake_proxy: str, fake_engine, tmp_path: Path
) -> None:
    fake_engine.tool_calls = [{"name": "computer", "arguments": json.dumps(CLICK)}]
    first = _post(fake_proxy, "responses", FIRST)

    [tool] = fake_engine.requests[-1]["tools"]
    assert tool["function"]["name"] == "computer" and tool["function"]["parameters"] == RESPONSES_ACTION_SCHEMA
    assert "1280x800 pixels" in tool["function"]["description"]
    [item] = first["output"]
    assert item == {"id": item["id"], "type": "computer_call", "call_id": "call_0", "action": CLICK,
                    "pending_safety_checks": [], "status": "completed"}  # fmt: skip
    assert item["id"].startswith("cu_")

    # Stagehand's next step: only the screenshot after the click, naming the response it follows.
    fake_engine.tool_calls = None
    output = {"type": "input_image", "image_url": data_url(SCREEN_2), "current_url": "http://127.0.0.1:9/"}
    second = {"model": "openforge-policy", "tools": [PREVIEW_TOOL], "previous_response_id": first["id"],
              "input": [{"type": "computer_call_output", "call_id": "call_0", "output": output}], "truncation": "auto"}  # fmt: skip
    sent = copy.deepcopy(second)
    _post(fake_proxy, "responses", second)

    engine_got = fake_engine.requests[-1]
    assert engine_got["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "computer", "arguments": json.dumps(CLICK)}},
        ]},
        {"role": "tool", "tool_call_id": "call_0", "content": "Current URL: http://127.0.0.1:9/"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(SCREEN_2)}}]},
    ]  # fmt: skip
    out = tmp_path / "out"
    calls = read_session(out / "cu.jsonl")
    assert calls[0].translation.mapped[0].startswith("tools[0] computer_use_preview -> function 'computer'")
    assert "input[2] computer_call -> assistant tool call 'computer'" in calls[1].translation.mapped
    assert "input[3] computer_call_output -> tool message" in calls[1].translation.mapped
    assert "truncation" in calls[1].translation.ignored
    assert rebuild_request(calls[1], out / "images") == sent  # as Stagehand sent it, screenshot included
    assert rebuild_upstream_request(calls[1], out / "images") == engine_got


def test_arguments_that_are_no_action_stay_a_function_call_named_computer(fake_proxy: str, fake_engine) -> None:
    fake_engine.tool_calls = [{"name": "computer", "arguments": '{"x": 1'}]
    [item] = _post(fake_proxy, "responses", FIRST)["output"]
    assert (item["type"], item["name"], item["arguments"]) == ("function_call", "computer", '{"x": 1')


def test_a_function_named_computer_without_the_computer_tool_is_an_ordinary_function_call(fake_proxy: str, fake_engine) -> None:
    fake_engine.tool_calls = [{"name": "computer", "arguments": json.dumps(CLICK)}]
    function = {"type": "function", "name": "computer", "parameters": {"type": "object"}}
    [item] = _post(fake_proxy, "responses", {**FIRST, "tools": [function]})["output"]
    assert item["type"] == "function_call"


def test_streamed_computer_call_is_one_item_added_and_done_and_matches_the_plain_answer(fake_proxy: str, fake_engine) -> None:
    fake_engine.tool_calls = [{"name": "computer", "arguments": json.dumps(CLICK)}, {"name": "computer", "arguments": "nope"}]
    plain = _post(fake_proxy, "responses", FIRST)
    events = _events(fake_proxy, "responses", FIRST)

    kinds = [event["type"] for event in events]
    assert kinds[2:] == [
        "response.output_item.added", "response.output_item.done",  # the computer_call, whole
        "response.output_item.added", "response.function_call_arguments.delta",  # the malformed call
        "response.function_call_arguments.done", "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert events[2]["item"]["action"] == CLICK and events[2]["item"]["status"] == "in_progress"
    final = events[-1]["response"]["output"]
    strip = lambda items: [{k: v for k, v in item.items() if k != "id"} for item in items]  # noqa: E731
    assert strip(final) == strip(plain["output"])
    assert [item["type"] for item in final] == ["computer_call", "function_call"]


def test_a_computer_call_output_answering_no_call_keeps_its_screenshot_and_drops_the_tool_message() -> None:
    request = {"input": [{"type": "computer_call_output", "call_id": "c9", "output": {"type": "input_image", "image_url": "data:image/png;base64,AA=="}}]}
    chat, notes = to_chat(request)
    assert chat["messages"] == [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]
    assert "input[0] tool message (no computer_call 'c9' before it)" in notes.dropped


def _anthropic_body(tool_type: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    tool = {"type": tool_type, "name": "computer", "display_width_px": 1280, "display_height_px": 800, "display_number": 1}
    return {"model": "openforge-policy", "max_tokens": 4096, "system": "You drive a browser.", "messages": messages, "tools": [tool]}


@pytest.mark.parametrize("tool_type", ["computer_20250124", "computer_20241022"])
def test_anthropic_computer_tool_is_a_function_with_its_documented_schema_and_calls_come_back_as_tool_use(
    tool_type: str, fake_proxy: str, fake_engine, tmp_path: Path
) -> None:
    action = {"action": "left_click", "coordinate": [120, 48]}
    fake_engine.tool_calls = [{"name": "computer", "arguments": json.dumps(action)}]
    message = _post(fake_proxy, "messages", _anthropic_body(tool_type, [{"role": "user", "content": "Register."}]))

    [tool] = fake_engine.requests[-1]["tools"]
    assert tool["function"]["name"] == "computer" and tool["function"]["parameters"] == ANTHROPIC_SCHEMAS[tool_type]
    assert ("scroll" in tool["function"]["parameters"]["properties"]["action"]["enum"]) == (tool_type == "computer_20250124")
    assert "1280x800 pixels" in tool["function"]["description"]
    assert message["content"] == [{"type": "tool_use", "id": "call_0", "name": "computer", "input": action, "caller": {"type": "direct"}}]
    assert message["stop_reason"] == "tool_use"

    # Stagehand's next call: the whole history, the screenshot inside the tool_result.
    fake_engine.tool_calls = None
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(SCREEN_1)}}
    result = {"type": "tool_result", "tool_use_id": "call_0", "content": [image, {"type": "text", "text": "Current URL: x"}]}
    second = _anthropic_body(tool_type, [
        {"role": "user", "content": "Register."},
        {"role": "assistant", "content": message["content"]},
        {"role": "user", "content": [result]},
    ])  # fmt: skip
    _post(fake_proxy, "messages", second)
    assert fake_engine.requests[-1]["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "computer", "arguments": json.dumps(action, separators=(",", ":"))}},
        ]},
        {"role": "tool", "tool_call_id": "call_0", "content": "Current URL: x"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(SCREEN_1)}}]},
    ]  # fmt: skip
    calls = read_session(tmp_path / "out" / "cu.jsonl")
    assert calls[0].translation.mapped == [f"tools[0] {tool_type} -> function 'computer' with its documented input schema"]
    assert rebuild_request(calls[1], tmp_path / "out" / "images") == second


def test_anthropic_streamed_computer_call_is_a_tool_use_block(fake_proxy: str, fake_engine) -> None:
    action = {"action": "key", "text": "Tab"}
    fake_engine.tool_calls = [{"name": "computer", "arguments": json.dumps(action)}]
    events = _events(fake_proxy, "messages", _anthropic_body("computer_20250124", [{"role": "user", "content": "Go."}]))
    [start] = [e for e in events if e["type"] == "content_block_start"]
    assert start["content_block"]["type"] == "tool_use" and start["content_block"]["name"] == "computer"
    pieces = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta")
    assert json.loads(pieces) == action
