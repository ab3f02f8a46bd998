"""Candidate turns as the dev engine plays them: element references resolved against a page
that lists every element the turn names (browser-use's listing, numbered as a fresh browser
might number it), so token counts are those of the turn the policy is scored on."""

from __future__ import annotations

import re

from components.core.choices import ChoiceBook, TaskChoices
from components.core.scripted_turns import ScriptedTurn
from components.rollout.harnesses import get_harness

BROWSER_USE = get_harness("browser-use")


def browser_use_book(tasks: list[TaskChoices]) -> ChoiceBook:
    return ChoiceBook(
        tasks=tasks, turn_pattern=BROWSER_USE.choice_turn_pattern, element_pattern=BROWSER_USE.choice_element_pattern
    )


def page_listing(candidates: list[ScriptedTurn]) -> str:
    """browser-use's listing of every element the candidates name, each a three-digit number."""
    described = sorted({d for c in candidates for d in re.findall(r"\{\{element:(.+?)\}\}", c.content)})
    return "\n".join(f"[{100 + n}]{description} />" for n, description in enumerate(described))


def resolved_turn(turn: list[ScriptedTurn]) -> list[ScriptedTurn]:
    """The turn's candidates with their elements resolved (unchanged when they name none)."""
    book = browser_use_book([TaskChoices(task_id="t", match="task", turns=[turn])])
    found = book.candidates(f"task <step_info>Step1 maximum:4 {page_listing(turn)}", 0)
    assert found is not None and all("{{element:" not in c.content for c in found[2])
    return found[2]
