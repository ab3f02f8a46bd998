"""The supported formats by vLLM's names, and the checks config fields run on a name."""

from __future__ import annotations

from collections.abc import Mapping
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
    return _supported("tool_call_parser", name, TOOL_CALL_FORMATS)


def check_reasoning_parser(name: str) -> str:
    return _supported("reasoning_parser", name, REASONING_FORMATS)


def _supported(setting: str, name: str, formats: Mapping[str, object]) -> str:
    if name not in formats:
        raise ValueError(
            f"{setting} {name!r} is not supported; supported: {', '.join(formats)} "
            f"(vLLM's names), or null for no {setting.removesuffix('_parser').replace('_', '-')} parsing"
        )
    return name


# Config field types: the engine's and the proxy's settings refuse the same names the same way.
ToolCallParserName = Annotated[str, AfterValidator(check_tool_call_parser)]
ReasoningParserName = Annotated[str, AfterValidator(check_reasoning_parser)]
