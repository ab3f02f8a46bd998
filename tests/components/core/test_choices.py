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


# browser-use's element listing (its DOM serializer), as two fresh browsers numbered one page.
BROWSER_USE_ELEMENT = r"\[(\d+)\]"
PAGE = """Interactive elements:
[35]<label />
\tFull name
\t|SHADOW(open)|[{name}]<input name=name />
[56]<label />
\t[{l}]<input type=radio name=size value=L checked=false />
[62]<label />
\t[{xl}]<input type=radio name=size value=XL checked=false />
\tXL
[66]<button />
\tSubmit registration
"""


def _element_book() -> ChoiceBook:
    def fill(size: str) -> dict:
        name, radio = "{{element:<input name=name}}", "{{element:<input type=radio name=size value=" + size + "}}"
        return {"content": '{"action":[{"input":{"index":' + name + ',"text":"Kemi"}},{"click":{"index":' + radio + "}}]}"}

    turns = [[fill("L"), fill("XL")],
             [{"content": '{"click":{"index":{{element:<button />  Submit registration}}}}'}]]
    return ChoiceBook.model_validate(
        {"tasks": [{"task_id": "form", "match": LONG, "turns": turns}], "turn_pattern": BROWSER_USE_STEP,
         "element_pattern": BROWSER_USE_ELEMENT}
    )


@pytest.mark.parametrize(("name", "l", "xl"), [(15, 19, 20), (16, 20, 21), (115, 230, 9)])
def test_candidates_name_elements_by_what_the_page_lists_whatever_their_numbers(name: int, l: int, xl: int) -> None:
    """The numbers are the browser's node ids and move between fresh browsers; the
    candidates follow the page, so the right one stays right."""
    book = _element_book()
    request = _browser_use_request(1) + PAGE.format(name=name, l=l, xl=xl)
    _, _, (right, wrong) = book.candidates(request, 0)
    assert right.content == f'{{"action":[{{"input":{{"index":{name},"text":"Kemi"}}}},{{"click":{{"index":{l}}}}}]}}'
    assert wrong.content.endswith(f'{{"click":{{"index":{xl}}}}}]}}')  # value=L did not match XL's listing
    # A description matches across the listing's line breaks and tabs, and the page as it is now wins.
    later = _browser_use_request(2) + PAGE.format(name=1, l=2, xl=3) + PAGE.format(name=4, l=5, xl=6).replace("[66]", "[77]")
    assert book.candidates(later, 0)[2][0].content == '{"click":{"index":77}}'


def test_an_element_the_page_does_not_list_leaves_the_turn_to_free_sampling(caplog: pytest.LogCaptureFixture) -> None:
    request = _browser_use_request(2) + "Interactive elements:\nRegistration received\n"
    assert _element_book().candidates(request, 0) is None
    assert "form turn 1: the page lists no element '<button /> Submit registration'" in caplog.text


def test_element_references_need_a_harness_that_numbers_elements() -> None:
    with pytest.raises(ValidationError, match=r"candidates of \['form'\] name page elements.*choice_element_pattern"):
        ChoiceBook.model_validate(_element_book().model_dump() | {"element_pattern": None})
    with pytest.raises(ValidationError, match="element_pattern '<x>' needs a group"):
        ChoiceBook.model_validate({"tasks": [], "element_pattern": "<x>"})


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
