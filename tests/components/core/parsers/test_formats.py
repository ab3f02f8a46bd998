"""Our parsers against vLLM's: the golden file recorded from vLLM 0.32's own parsers (vLLM itself: test_formats_vllm.py).

Regenerate the golden after changing ``tests/fixtures/parsers/cases.json`` (in a venv with vLLM):
``.venv-vllm/bin/python scripts/record_vllm_parser_outputs.py`` (``make vllm`` builds that venv).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.core.parsers import ChatParsers

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "parsers"
CASES = json.loads((FIXTURES / "cases.json").read_text())
GOLDEN = json.loads((FIXTURES / "vllm_outputs.json").read_text())["outputs"]
REQUEST = {"tools": CASES["tools"]}


def _arguments(text: str) -> dict[str, Any]:
    try:
        return {"arguments": json.loads(text)}
    except json.JSONDecodeError:
        return {"arguments_text": text}


def ours(case: dict[str, Any]) -> dict[str, Any]:
    answer = ChatParsers(case.get("tool_call_parser"), case.get("reasoning_parser")).answer(case["text"], "stop", REQUEST)
    calls = [{"name": c["function"]["name"], **_arguments(c["function"]["arguments"])} for c in answer.tool_calls]
    return {"reasoning": answer.reasoning, "content": answer.content, "tool_calls": calls}


def streamed(case: dict[str, Any], piece: int) -> dict[str, Any]:
    """The answer reassembled from the deltas of ``case``'s text fed ``piece`` characters at a time."""
    deltas = ChatParsers(case.get("tool_call_parser"), case.get("reasoning_parser")).deltas(REQUEST)
    text = case["text"]
    reasoning, content, names, arguments = "", "", {}, {}
    for start in range(0, len(text), piece):
        delta = deltas.feed(text[start : start + piece], finished=start + piece >= len(text)) or {}
        reasoning += delta.get("reasoning") or ""
        content += delta.get("content") or ""
        for call in delta.get("tool_calls") or ():
            if "name" in call["function"]:
                names[call["index"]] = call["function"]["name"]
            arguments[call["index"]] = arguments.get(call["index"], "") + call["function"].get("arguments", "")
    calls = [{"name": names[i], **_arguments(arguments.get(i, ""))} for i in sorted(names)]
    return {"reasoning": reasoning or None, "content": content or None, "tool_calls": calls}


@pytest.mark.parametrize("case", CASES["cases"], ids=[c["id"] for c in CASES["cases"]])
def test_our_answer_is_vllms(case: dict[str, Any]) -> None:
    assert ours(case) == GOLDEN[case["id"]]


def test_the_golden_covers_every_supported_format() -> None:
    from components.core.parsers import REASONING_FORMATS, TOOL_CALL_FORMATS

    assert {c.get("tool_call_parser") for c in CASES["cases"]} >= set(TOOL_CALL_FORMATS)
    assert {c.get("reasoning_parser") for c in CASES["cases"]} >= set(REASONING_FORMATS)
    assert set(GOLDEN) == {c["id"] for c in CASES["cases"]}


# Streams that end in a state the finished reading repairs (broken JSON shown as content,
# text dropped around calls) cannot take back what was already sent.
_STREAM_DIFFERS = {"hermes-malformed", "llama3_json-malformed", "llama3_json-text-then-json", "mistral-malformed",
                   "hermes-qwen3-call-in-think", "qwen3-double-end", "qwen3_coder-qwen3-call-in-think"}  # fmt: skip


@pytest.mark.parametrize("piece", [1, 4, 1000])
@pytest.mark.parametrize("case", [c for c in CASES["cases"] if c["id"] not in _STREAM_DIFFERS], ids=lambda c: c["id"])
def test_streamed_deltas_reassemble_to_the_finished_answer(case: dict[str, Any], piece: int) -> None:
    finished = ours(case)
    got = streamed(case, piece)
    if finished["tool_calls"]:  # whitespace before a call is sent before the call is known to come
        got["content"] = (got["content"] or "").strip() or None
        finished["content"] = (finished["content"] or "").strip() or None
    assert got == finished


def test_a_call_inside_closed_reasoning_is_no_call_and_the_reasoning_is_not_content() -> None:
    answer = ChatParsers("hermes", "deepseek_r1").answer(
        '<think>maybe <tool_call>{"name": "ls", "arguments": {}}</tool_call></think>Answer.', "stop", REQUEST
    )
    assert answer.tool_calls == [] and answer.content == "Answer." and "<tool_call>" in answer.reasoning
    assert answer.finish_reason == "stop"
