"""The splice on token lists shaped like a Qwen3-style template's renderings.

Such a template writes an empty think block before the latest answer (``through``) but
not before an answer more messages follow (``whole``), and drops earlier thinking: the
answer's own rendering changes, the conversation around it does not.
"""

from __future__ import annotations

from array import array

from components.proxy.provenance._memory import Sampled
from components.proxy.provenance._splice import (
    NOT_A_PREFIX,
    OPENING_DIFFERS,
    UNCLOSED_TURN,
    splice,
    splice_rerendered,
)

END, NL = 900, 10  # the end-of-turn special token, then a newline: the template's closing
CLOSING = [END, NL]
SYSTEM_USER = [1, 2, 3, 4]
OPENING = [*SYSTEM_USER, 50, 51]  # the generation prompt: "<|im_start|>assistant\n"
THINK, EMPTY_THINK = [60, 61, 62, 63], [60, 63]  # "<think>plan</think>" and "<think></think>"
ANSWER = [70, 71]
TOOL_TURN = [52, 80, 81, END, NL, 50, 51]  # the tool's result, then the next generation prompt


def _sampled(ended_turn: bool) -> Sampled:
    completion = [*THINK, *ANSWER, *([END] if ended_turn else [])]
    return Sampled(call_index=0, context="c", prompt_ids=array("i", OPENING), completion_ids=array("i", completion))


def test_an_answer_rendered_differently_once_a_tool_result_follows_is_spliced_with_its_thinking() -> None:
    through = [*OPENING, *EMPTY_THINK, *ANSWER, *CLOSING]  # the harness dropped the thinking
    whole = [*OPENING, *ANSWER, *CLOSING, *TOOL_TURN]
    assert splice(_sampled(True), CLOSING, through, whole) == NOT_A_PREFIX

    prompt = splice_rerendered(_sampled(True), CLOSING, OPENING, whole)

    # The sampled thinking is back, the model's own end-of-turn is not doubled, the tool turn follows.
    assert prompt == [*OPENING, *THINK, *ANSWER, END, NL, *TOOL_TURN]
    assert splice_rerendered(_sampled(False), CLOSING, OPENING, whole) == prompt


def test_a_conversation_rendered_differently_before_the_answer_is_refused() -> None:
    whole = [*SYSTEM_USER, 99, 50, 51, *ANSWER, *CLOSING, *TOOL_TURN]  # an earlier message changed

    assert splice_rerendered(_sampled(True), CLOSING, OPENING, whole) == OPENING_DIFFERS


def test_an_answer_turn_that_never_closes_is_refused() -> None:
    whole = [*OPENING, *ANSWER, END, 11]  # the end-of-turn token, but not the template's closing

    assert splice_rerendered(_sampled(True), CLOSING, OPENING, whole) == UNCLOSED_TURN
    assert splice_rerendered(_sampled(True), [], OPENING, whole) == UNCLOSED_TURN


def test_the_first_closing_after_the_opening_ends_the_answer() -> None:
    later = [52, 80, END, NL, 50, 51, 70, END, NL, 52, 81, END, NL, 50, 51]
    whole = [*OPENING, *ANSWER, *CLOSING, *later]

    prompt = splice_rerendered(_sampled(True), CLOSING, OPENING, whole)

    assert prompt == [*OPENING, *THINK, *ANSWER, END, NL, *later]
