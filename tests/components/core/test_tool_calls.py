"""Tool calls read alike from every recorded API's answer."""

from __future__ import annotations

from components.core.tool_calls import COMPUTER_TOOL, ToolCall, answer_tool_calls


def test_each_api_shape_gives_id_name_and_arguments() -> None:
    anthropic = {"content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}
    responses = {"output": [
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "spawn_agent", "namespace": "multi_agent_v1", "arguments": '{"message": "go"}'},
        {"type": "computer_call", "call_id": "cu_1", "action": {"type": "click", "x": 1, "y": 2}},
    ]}  # fmt: skip
    chat = {"choices": [{"message": {"tool_calls": [{"id": "c1", "function": {"name": "shell", "arguments": "not json"}}]}}]}

    assert answer_tool_calls(anthropic) == [ToolCall("toolu_1", "Bash", {"command": "ls"})]
    assert answer_tool_calls(responses) == [
        ToolCall("call_1", "spawn_agent", {"message": "go"}, "multi_agent_v1"),
        ToolCall("cu_1", COMPUTER_TOOL, {"type": "click", "x": 1, "y": 2}),
    ]
    assert answer_tool_calls(chat) == [ToolCall("c1", "shell", {})]  # arguments that are no JSON object: none


def test_no_response_or_no_calls() -> None:
    assert answer_tool_calls(None) == []
    assert answer_tool_calls({"choices": [{"message": {"content": "done"}}]}) == []
