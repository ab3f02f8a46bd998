"""Reading a model's generated text as a chat answer: reasoning, content, tool calls.

One format per module, by vLLM's parser names (``registry.py``): the dev engine's chat
endpoint and the recording proxy's token path read answers with the same configured
format as the vLLM serving the policy (``engine.vllm.tool_call_parser`` and
``reasoning_parser``), so a harness gets the same answer whichever path served its call.

These are our own implementations, checked against vLLM's outputs
(``tests/fixtures/parsers/``): vLLM's parser classes cannot be imported here, since the
proxy image must stay small and start fast and vLLM is a multi-GB install with torch.
"""

from components.core.parsers.chat import REASONING_FIELD, ChatAnswer, ChatDeltas, ChatParsers, parses_tools
from components.core.parsers.registry import (
    REASONING_FORMATS,
    TOOL_CALL_FORMATS,
    ReasoningParserName,
    ToolCallParserName,
    check_reasoning_parser,
    check_tool_call_parser,
)

__all__ = [
    "REASONING_FIELD",
    "REASONING_FORMATS",
    "TOOL_CALL_FORMATS",
    "ChatAnswer",
    "ChatDeltas",
    "ChatParsers",
    "ReasoningParserName",
    "ToolCallParserName",
    "check_reasoning_parser",
    "check_tool_call_parser",
    "parses_tools",
]
