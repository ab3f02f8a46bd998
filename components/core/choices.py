"""Choice mode's contract: candidate turns per task, from the task set to the dev engine.

A random tiny model cannot drive a real harness, and scripting it teaches nothing: a
forced turn succeeds or fails the same way every time. In choice mode a task offers, for
each assistant turn, a few candidate turns (a right and a wrong command, a careful and a
careless edit). The engine scores every candidate's token sequence under the policy and
samples one in proportion to its probability (at the sampling temperature), then returns
that candidate's tokens with the policy's own logprobs. Training moves those
probabilities, so the pass rate inside the real harness can rise. docs/engine.md
("Choice mode") says how this differs from free sampling and what it means for the
importance ratio.

The prepare step writes the iteration's book (``RunLayout.choices``) from the chosen
tasks' ``choices``; the serve step hands it to the engine. The engine finds a request's
task by its ``match`` text (the task's prompt) in the rendered conversation, and the turn
by the number of assistant messages before it, as scripted mode does; or, for a harness
that sends every step as a fresh conversation (browser-use: no assistant turns, the
history written into the prompt), by the step number the harness states in the prompt
(``turn_pattern``, from the harness adapter's ``choice_turn_pattern``).

A candidate for a harness that shows the model numbered page elements (browser-use's
``[14]<input name=name />``) names an element by what the page says of it:
``{{element:<input name=name}}`` becomes the number the request shows before that text
(``element_pattern``, from the adapter's ``choice_element_pattern``). Those numbers are
the browser's own node ids and move between fresh browsers, so a number written into the
task would be right in some rollouts and wrong in others: reward noise the policy cannot
learn from.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from collections.abc import Callable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from components.core.scripted_turns import ScriptedTurn
from components.core.validation import join_errors

CandidateTurns = list[list[ScriptedTurn]]

# The engine's marks on its answer, which the proxy writes into the call's record so that
# training reads what happened from the record, never from the book (docs/engine.md,
# "Choice mode"). CHOICE_HEADER: what choice mode did with the call (one of CHOICE_MARKS);
# FORCED_FROM_HEADER: the completion's tokens from this index on were forced, not sampled
# (a one-candidate turn from 0, a scripted turn after its sampled text).
CHOICE_HEADER = "x-openforge-choice"
FORCED_FROM_HEADER = "x-openforge-forced-from"
DRAWN, FORCED, MISS = "drawn", "forced", "miss"
CHOICE_MARKS = (DRAWN, FORCED, MISS)
_ELEMENT = re.compile(r"\{\{element:(.+?)\}\}")
_log = logging.getLogger(__name__)


def element_ref(description: str) -> str:
    """The placeholder a candidate writes for the element the page lists with ``description``."""
    if not description.strip() or "}}" in description:
        raise ValueError(f"an element description must be non-empty text without '}}}}': {description!r}")
    return "{{element:" + description + "}}"


class ElementNotFoundError(ValueError):
    """A candidate names a page element that the request does not list."""


def check_candidate_turns(turns: CandidateTurns) -> CandidateTurns:
    """Refuse what cannot be scored: an empty turn, or a candidate that samples text of its own."""
    for index, candidates in enumerate(turns):
        if not candidates:
            raise ValueError(f"turn {index} offers no candidate; give it at least one (a single one is forced)")
        if any(candidate.sampled_text for candidate in candidates):
            raise ValueError(
                f"turn {index}: a candidate cannot use sampled_text (its tokens must be known to be scored); "
                "write its content out"
            )
    return turns


def normalize_text(text: str) -> str:
    """Whitespace folded to single spaces: harnesses re-wrap and indent the prompt they are given."""
    return " ".join(text.split())


class TaskChoices(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    match: str = Field(min_length=1, description="Text found in every conversation of this task (its prompt).")
    turns: CandidateTurns = Field(description="Per assistant turn, the candidate turns; one candidate is forced.")

    @field_validator("turns")
    @classmethod
    def _scorable(cls, value: CandidateTurns) -> CandidateTurns:
        return check_candidate_turns(value)


class ChoiceBook(BaseModel):
    """Every task of an iteration that offers choices."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[TaskChoices]
    turn_pattern: str | None = Field(
        None,
        description="A regex whose first group is the 1-based step the harness states in the conversation "
        "(the last match counts); unset: the turn is the number of assistant messages before the request.",
    )
    element_pattern: str | None = Field(
        None,
        description="A regex whose first group is the reference the harness shows the model just before an "
        "element's description (browser-use: \\[(\\d+)\\]); unset: candidates cannot name elements.",
    )
    error_rate: float | None = Field(
        None,
        ge=0,
        le=1,
        description="A reference teacher's book (`openforge record`, teacher.kind reference): each turn's first "
        "candidate is the reference, drawn with probability 1 - error_rate, else one of the others at random; "
        "unset: the policy draws by its own probabilities.",
    )
    _keys: list[tuple[str, TaskChoices]] = PrivateAttr(default_factory=list)

    @field_validator("turn_pattern", "element_pattern")
    @classmethod
    def _one_group(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return value
        try:
            groups = re.compile(value).groups
        except re.error as exc:
            raise ValueError(f"{info.field_name} {value!r} is not a regular expression: {exc}") from None
        if groups < 1:
            raise ValueError(f"{info.field_name} {value!r} needs a group that captures the number, e.g. Step(\\d+)")
        return value

    @model_validator(mode="after")
    def _elements_need_a_pattern(self) -> "ChoiceBook":
        if self.element_pattern is None:
            naming = [task.task_id for task in self.tasks if _ELEMENT.search(task.model_dump_json())]
            if naming:
                raise ValueError(
                    f"the candidates of {naming} name page elements ({{{{element:...}}}}), but this harness lists no "
                    "numbered elements (its adapter sets no choice_element_pattern): run these tasks with browser-use"
                )
        return self

    def model_post_init(self, _context: object) -> None:
        # Longest first: a task whose prompt contains another task's prompt must win.
        self._keys = sorted(
            ((normalize_text(task.match), task) for task in self.tasks), key=lambda pair: -len(pair[0])
        )

    def find(self, conversation: str) -> TaskChoices | None:
        """The task whose match text occurs in ``conversation`` (the rendered prompt), if any."""
        folded = normalize_text(conversation)
        return next((task for key, task in self._keys if key in folded), None)

    def candidates(self, conversation: str, assistant_turns: int) -> tuple[str, int, list[ScriptedTurn]] | None:
        """(task id, turn, candidates) for this request's turn; None: sample freely.

        The turn is ``assistant_turns`` (the assistant messages before the request), or the
        step ``turn_pattern`` reads from the conversation; a conversation that states no
        step is no turn of the book (sampled freely). Element references are resolved
        against the conversation; a turn naming an element the page does not list is
        sampled freely too, with a warning (the harness is on another page than the
        candidates expect).
        """
        task = self.find(conversation)
        turn = assistant_turns if self.turn_pattern is None else self._stated_turn(conversation)
        if task is None or turn is None or not 0 <= turn < len(task.turns):
            return None
        try:
            candidates = [self._resolve(candidate, conversation) for candidate in task.turns[turn]]
        except ElementNotFoundError as exc:
            _log.warning("%s turn %d: %s; sampling freely", task.task_id, turn, exc)
            return None
        return task.task_id, turn, candidates

    def _resolve(self, candidate: ScriptedTurn, conversation: str) -> ScriptedTurn:
        """``candidate`` with each ``{{element:...}}`` replaced by the reference the conversation shows."""
        if self.element_pattern is None or not _ELEMENT.search(dumped := candidate.model_dump_json()):
            return candidate
        folded, prefix = normalize_text(conversation), self.element_pattern

        def reference(match: re.Match[str]) -> str:
            description = normalize_text(match.group(1))
            # The description ends where a word ends: value=X must not match value=XL's listing.
            listed = list(re.finditer(prefix + re.escape(description) + r"(?![\w-])", folded))
            if not listed:
                raise ElementNotFoundError(f"the page lists no element {description!r}")
            return listed[-1].group(1)  # the latest listing: the page as it is now

        return ScriptedTurn.model_validate(_map_strings(json.loads(dumped), lambda text: _ELEMENT.sub(reference, text)))

    def _stated_turn(self, conversation: str) -> int | None:
        assert self.turn_pattern is not None
        steps = re.findall(self.turn_pattern, conversation)
        if not steps:
            return None
        last = steps[-1]
        return int(last[0] if isinstance(last, tuple) else last) - 1


def _map_strings(value: object, change: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    return value


class ChoiceBookError(ValueError):
    """A choice book that cannot be used; the message names the file and the problem."""


def load_choice_book(path: str | Path) -> ChoiceBook:
    return parse_choice_book(_read(Path(path)), str(path))


def parse_choice_book(data: bytes | str, origin: str) -> ChoiceBook:
    try:
        raw = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ChoiceBookError(f"choice book {origin} is not valid JSON: {exc}") from None
    try:
        return ChoiceBook.model_validate(raw)
    except ValidationError as exc:
        raise ChoiceBookError(
            f'choice book {origin} is invalid ({join_errors(exc)}); expected {{"tasks": [{{"task_id": "...", '
            '"match": "<the task prompt>", "turns": [[<candidate turn>, ...], ...]}]}'
        ) from None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ChoiceBookError(f"cannot read choice book {path}: {exc.strerror}") from None
