"""The supported formats by vLLM's names, and the checks config fields run on a name."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from components.core.parsers._base import ToolCallFormat
from components.core.parsers.hermes import Hermes
from components.core.parsers.llama3_json import Llama3Json
from components.core.parsers.mistral import Mistral
from components.core.parsers.qwen3_coder import Qwen3Coder
from components.core.parsers.think import DeepSeekR1, Qwen3, ReasoningFormat

TOOL_CALL_FORMATS: dict[str, ToolCallFormat] = {fmt.name: fmt for fmt in (Hermes(), Qwen3Coder(), Llama3Json(), Mistral())}
REASONING_FORMATS: dict[str, ReasoningFormat] = {fmt.name: fmt for fmt in (Qwen3(), DeepSeekR1())}


def tool_call_format(name: str) -> ToolCallFormat:
    return TOOL_CALL_FORMATS[check_tool_call_parser(name)]


def reasoning_format(name: str) -> ReasoningFormat:
    return REASONING_FORMATS[check_reasoning_parser(name)]


def check_tool_call_parser(name: str) -> str:
    if name not in TOOL_CALL_FORMATS:
        raise ValueError(
            f"tool_call_parser {name!r} is not supported; supported: {', '.join(TOOL_CALL_FORMATS)} "
            "(vLLM's names), or null for no tool-call parsing"
        )
    return name


def check_reasoning_parser(name: str) -> str:
    if name not in REASONING_FORMATS:
        raise ValueError(
            f"reasoning_parser {name!r} is not supported; supported: {', '.join(REASONING_FORMATS)} "
            "(vLLM's names), or null for no reasoning parsing"
        )
    return name


# Config field types: the engine's and the proxy's settings refuse the same names the same way.
ToolCallParserName = Annotated[str, AfterValidator(check_tool_call_parser)]
ReasoningParserName = Annotated[str, AfterValidator(check_reasoning_parser)]
