"""The choice book: which task a conversation belongs to, and which candidates its turn offers."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.core.choices import ChoiceBook, ChoiceBookError, parse_choice_book

SHORT = "Say yes"
LONG = "Say yes, then write hello.txt"


def _book() -> ChoiceBook:
    return ChoiceBook.model_validate(
        {
            "tasks": [
                {"task_id": "short", "match": SHORT, "turns": [[{"content": "yes"}, {"content": "no"}]]},
                {"task_id": "long", "match": LONG, "turns": [[{"content": "a"}], [{"content": "b"}]]},
            ]
        }
    )


def test_the_longest_matching_prompt_wins_whatever_the_whitespace() -> None:
    book = _book()
    wrapped = "<|im_start|>user\nPlease:  Say yes,\n  then write   hello.txt<|im_end|>"
    assert book.find(wrapped).task_id == "long"
    assert book.find("user: Say yes please").task_id == "short"
    assert book.find("nothing of the kind") is None


def test_turns_index_the_candidates_and_run_out() -> None:
    book = _book()
    task_id, turn, candidates = book.candidates(SHORT, 0)
    assert (task_id, turn) == ("short", 0) and [c.content for c in candidates] == ["yes", "no"]
    assert book.candidates(LONG, 1)[2][0].content == "b"
    assert book.candidates(SHORT, 1) is None  # the book is spent: the model samples freely


# browser-use's step, as it writes it into every (assistant-free) request.
BROWSER_USE_STEP = r"<step_info>\s*Step\s*(\d+)"


def _browser_use_request(step: int) -> str:
    return f"<user_request>\n{LONG}\n</user_request>\n<agent_history>...</agent_history>\n<step_info>Step{step} maximum:5"


def test_a_harness_without_assistant_turns_is_placed_by_the_step_it_states() -> None:
    book = _book().model_copy(update={"turn_pattern": BROWSER_USE_STEP})
    assert book.candidates(_browser_use_request(1), 0)[1:] == (0, book.tasks[1].turns[0])
    assert book.candidates(_browser_use_request(2), 0)[1:] == (1, book.tasks[1].turns[1])
    assert book.candidates(_browser_use_request(3), 0) is None  # past the book: sampled freely
    # The last step stated counts (a system prompt may show an example step first).
    assert book.candidates("<step_info>Step1 (an example) " + _browser_use_request(2), 0)[1] == 1
    # A request that states no step is no turn of the book, whatever its assistant messages.
    assert book.candidates(LONG, 0) is None


@pytest.mark.parametrize(("pattern", "problem"), [("Step(", "not a regular expression"), (r"Step\d+", "needs a group")])
def test_a_turn_pattern_must_capture_the_step(pattern: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ChoiceBook.model_validate({"tasks": [], "turn_pattern": pattern})


@pytest.mark.parametrize(
    ("turns", "problem"),
    [([[]], "offers no candidate"), ([[{"sampled_text": 3}]], "cannot use sampled_text")],
)
def test_unscorable_turns_are_refused(turns: list, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        ChoiceBook.model_validate({"tasks": [{"task_id": "t", "match": "x", "turns": turns}]})


def test_a_bad_file_names_itself_and_the_expected_shape() -> None:
    with pytest.raises(ChoiceBookError, match=r"choices.json is invalid .*expected"):
        parse_choice_book('{"tasks": [{"task_id": "t"}]}', "choices.json")
    with pytest.raises(ChoiceBookError, match="not valid JSON"):
        parse_choice_book("{", "choices.json")
