"""The chat template renders conversations exactly as Qwen2.5's template does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.engine._chat_render import normalize_messages, render_chat, scripted_reply_ids
from components.engine._protocol import ApiError

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}

# Written out by hand from Qwen2.5-Instruct's template: the golden a real Qwen2.5 renders.
EXPECTED_WITH_TOOLS = (
    "<|im_start|>system\nYou are a bot.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n'
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n"
    "<|im_start|>assistant\nLet me check.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>\n'
    '<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response>'
    '\n<tool_response>\n{"temp": 25}\n</tool_response><|im_end|>\n'
    "<|im_start|>user\nthanks<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a bot."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                # OpenAI clients send arguments as a JSON string; vLLM parses them first.
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": '{"temp": 25}'}]},
        {"role": "user", "content": "thanks"},
    ]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_tools_tool_calls_and_tool_results_render_like_qwen25(tokenizer: Any) -> None:
    rendered = render_chat(tokenizer, normalize_messages(_conversation()), [WEATHER_TOOL])
    assert rendered == EXPECTED_WITH_TOOLS


def test_without_tools_or_system_message_qwens_default_system_prompt_is_used(tokenizer: Any) -> None:
    rendered = render_chat(tokenizer, normalize_messages([{"role": "user", "content": "hi"}]), None)
    assert rendered == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_scripted_reply_tokens_are_the_templates_assistant_turn(tokenizer: Any) -> None:
    messages = normalize_messages([{"role": "user", "content": "hi"}])
    reply = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}],
    }
    ids = scripted_reply_ids(tokenizer, messages, [WEATHER_TOOL], reply)
    expected = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>'
    assert tokenizer.decode(ids) == expected
    assert ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"content": "no role"}, "messages[0]"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}, "messages[0].content"),
        (
            {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]},
            "messages[0].tool_calls[0]",
        ),
    ],
)
def test_malformed_messages_are_refused_naming_the_field(message: dict[str, Any], field: str) -> None:
    with pytest.raises(ApiError) as caught:
        normalize_messages([message])
    assert caught.value.param == field and field in caught.value.message
