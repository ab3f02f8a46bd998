"""Reading a model's generated text as a chat answer: reasoning, content, tool calls.

One format per module, by vLLM's parser names (``registry.py``): the dev engine's chat
endpoint and the recording proxy's token path read answers with the same configured
format as the vLLM serving the policy (``engine.vllm.tool_call_parser`` and
``reasoning_parser``), so a harness gets the same answer whichever path served its call.

These are our own implementations, checked against vLLM's outputs
(``tests/fixtures/parsers/``): vLLM's parser classes cannot be imported here, since the
proxy image must stay small and start fast and vLLM is a multi-GB install with torch.

Exports load on first use (``components.core.lazy``): the registry validates names with
pydantic, which a reader of one format module alone does not need.
"""

from components.core.lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "REASONING_FIELD": "components.core.parsers.chat:REASONING_FIELD",
        "ChatAnswer": "components.core.parsers.chat:ChatAnswer",
        "ChatDeltas": "components.core.parsers.chat:ChatDeltas",
        "ChatParsers": "components.core.parsers.chat:ChatParsers",
        "parses_tools": "components.core.parsers.chat:parses_tools",
        "REASONING_FORMATS": "components.core.parsers.registry:REASONING_FORMATS",
        "TOOL_CALL_FORMATS": "components.core.parsers.registry:TOOL_CALL_FORMATS",
        "ReasoningParserName": "components.core.parsers.registry:ReasoningParserName",
        "ToolCallParserName": "components.core.parsers.registry:ToolCallParserName",
        "check_reasoning_parser": "components.core.parsers.registry:check_reasoning_parser",
        "check_tool_call_parser": "components.core.parsers.registry:check_tool_call_parser",
    },
)
