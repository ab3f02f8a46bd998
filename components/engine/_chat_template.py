"""The tiny model's chat template: renders conversations exactly as Qwen2.5's does.

Byte-for-byte agreement with Qwen2.5 matters: the recorded prompts of a dev run then have
the same shape as those of a real Qwen2.5 run (tools in a ``# Tools`` system block, tool
calls as ``<tool_call>`` JSON, tool results as user turns in ``<tool_response>``), and
vLLM's ``hermes`` tool parser reads the model's output the same way on both.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A raw string: the `\n` inside the Jinja string literals are Jinja escapes, exactly as
# they appear in Qwen2.5's tokenizer_config.json once its JSON is decoded.
CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

_TURN_START = "<|im_start|>assistant"
_GENERATION_PROMPT = _TURN_START + "\n"
_TOOLS_BLOCK = re.compile(r"<tools>\n(.*?)\n</tools>", re.DOTALL)


def read_prompt(prompt: str) -> tuple[int, list[dict[str, Any]] | None] | None:
    """(assistant turns so far, declared tools) of a prompt this template rendered with its
    generation prompt, or None for any other prompt.

    Scripted mode needs both to pick and resolve its turn when a client sends the rendered
    prompt itself (token ids to ``/v1/completions``) instead of the messages.
    """
    if not prompt.endswith(_GENERATION_PROMPT):
        return None
    tools_block = _TOOLS_BLOCK.search(prompt)  # the first one is the system block's
    tools = None
    if tools_block is not None:
        try:
            tools = [json.loads(line) for line in tools_block.group(1).split("\n") if line.strip()]
        except json.JSONDecodeError:
            tools = None
    return prompt.count(_TURN_START) - 1, tools
