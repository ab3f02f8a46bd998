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
    task_id, candidates = book.candidates(SHORT, 0)
    assert task_id == "short" and [c.content for c in candidates] == ["yes", "no"]
    assert book.candidates(LONG, 1)[1][0].content == "b"
    assert book.candidates(SHORT, 1) is None  # the book is spent: the model samples freely


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
