"""Record what vLLM's own parsers make of the fixture completions (the golden file our parsers match).

Run in a virtual environment that has vLLM (its CPU build is enough; docs/engine.md):

    /work/vllm-venv/bin/python scripts/record_vllm_parser_outputs.py [--out FILE]

It reads ``tests/fixtures/parsers/cases.json`` and writes ``tests/fixtures/parsers/vllm_outputs.json``:
per case, vLLM's reasoning, content and tool calls (names and arguments; ids vary per run).
The parsers run as vLLM's chat endpoint composes them (``ParserManager.get_parser``), with
the tiny model's tokenizer given the special tokens the formats use.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "parsers"
# Tokens the formats are written with; vLLM's parsers look their ids up in the vocabulary.
# A case with "mistral_tokenizer": "pre_v11" runs without [ARGS], as Mistral's older tokenizers
# (vLLM then reads the older JSON-array format).
EXTRA_TOKENS = ("<think>", "</think>", "<|python_tag|>", "[TOOL_CALLS]", "[CALL_ID]")
V11_TOKENS = ("[ARGS]",)


def tokenizer(pre_v11: bool = False) -> Any:
    sys.path.insert(0, str(REPO))
    from components.engine._tokenizer_build import build_tokenizer

    built = build_tokenizer()
    built.add_tokens(list(EXTRA_TOKENS) + ([] if pre_v11 else list(V11_TOKENS)))
    return built


def vllm_answer(tokenizers: dict[bool, Any], tools: list[dict[str, Any]], case: dict[str, Any]) -> dict[str, Any]:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser.parser_manager import ParserManager

    tool_parser, reasoning_parser = case.get("tool_call_parser"), case.get("reasoning_parser")
    parser_cls = ParserManager.get_parser(
        tool_parser_name=tool_parser, reasoning_parser_name=reasoning_parser, enable_auto_tools=tool_parser is not None
    )
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)
    parser = parser_cls(tokenizers[case.get("mistral_tokenizer") == "pre_v11"], request.tools)
    reasoning, content, calls = parser.parse(case["text"], request, enable_auto_tools=tool_parser is not None)
    return {
        "reasoning": reasoning,
        "content": content,
        "tool_calls": [{"name": call.name, **_arguments(call.arguments)} for call in calls or ()],
    }


def _arguments(text: str) -> dict[str, Any]:
    """Arguments as JSON when they parse (ids and spacing vary), else the text as given."""
    try:
        return {"arguments": json.loads(text)}
    except json.JSONDecodeError:
        return {"arguments_text": text}


def vllm_version() -> str:
    import vllm

    return getattr(vllm, "__version__", "unknown")


def main() -> None:
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else FIXTURES / "vllm_outputs.json"
    fixtures = json.loads((FIXTURES / "cases.json").read_text())
    tokenizers = {False: tokenizer(), True: tokenizer(pre_v11=True)}
    outputs = {case["id"]: vllm_answer(tokenizers, fixtures["tools"], case) for case in fixtures["cases"]}
    golden = {"vllm_version": vllm_version(), "outputs": outputs}
    out.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(outputs)} cases from vLLM {golden['vllm_version']} to {out}")


if __name__ == "__main__":
    main()
