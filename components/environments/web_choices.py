"""Candidate turns for browser-use on the seeded web tasks (choice mode, docs/engine.md).

A random tiny model never writes browser-use's JSON, let alone the right element index.
In choice mode each assistant turn offers candidates: browser-use's ``agent_output`` with
the right action and one with a slip (the wrong element, the wrong answer), the last turn
browser-use's ``done`` (it accepts ``done`` only as a step's single action). The policy
draws among them by its own probabilities, the app's state decides the reward, and
training can move the draw (``examples/web.yaml``, ``make bench-gui-learning``).

The ``[N]`` indexes browser-use shows are Chromium's DOM node ids, read once off the
prompts browser-use sent for these pages and kept here. They are NOT fully stable: in a
fresh browser (every rollout gets one) the same page usually gets them, but in about half
the rollouts of a benchmark run every id of the page was one higher (``[15]<input
name=name``), and those rollouts fail whatever the policy draws (docs/environments.md).
A change to the apps' markup also moves them. The wrong candidate of a turn differs from the
right one in a few characters of the same token length (a test checks it), so neither is
favoured before learning.
"""

from __future__ import annotations

import json
from typing import Any

from components.environments.webapps import flights, form

Action = dict[str, Any]
Candidate = dict[str, str]  # a ScriptedTurn (components/core/scripted_turns.py) as task.yaml holds it

# The form (form.py's page): fields, then the size radios in SIZES order, the newsletter
# box and the submit button.
_FORM = {"name": 14, "email": 15, "session": 16, "newsletter": 21, "submit": 66}
_FORM_SIZE = dict(zip(form.SIZES, (17, 18, 19, 20)))
# Flights (flights.py): the search form on the home page, the results' "Select" links by
# row, and the booking form reached from the third row's link.
_FLIGHTS = {"from": 9, "to": 10, "date": 11, "search": 59, "passenger": 329, "confirm": 331}
_FLIGHTS_ROW_LINK = (222, 232, 242)


def _turn(next_goal: str, actions: list[Action]) -> Candidate:
    """browser-use's ``agent_output``: its schema requires these four fields."""
    output = {"evaluation_previous_goal": "", "memory": "", "next_goal": next_goal, "action": actions}
    return {"content": json.dumps(output, separators=(",", ":"))}


def _done(text: str) -> Candidate:
    return _turn("finish", [{"done": {"text": text, "success": True}}])


def _click(index: int) -> Action:
    return {"click": {"index": index}}


def _type(index: int, text: str) -> Action:
    return {"input": {"index": index, "text": text, "clear": True}}


def _select(index: int, text: str) -> Action:
    return {"select_dropdown": {"index": index, "text": text}}


def form_submit(world: form.World) -> list[list[Candidate]]:
    """Fill in the form (the slip: the next T-shirt size), submit, done.

    browser-use runs at most five actions a step: the submit click joins the filling when
    the newsletter box stays empty, else it is a step of its own.
    """
    wrong_size = form.SIZES[(form.SIZES.index(world.size) + 1) % len(form.SIZES)]

    def fill(size: str) -> list[Action]:
        actions = [
            _type(_FORM["name"], world.name),
            _type(_FORM["email"], world.email),
            _select(_FORM["session"], world.session),
            _click(_FORM_SIZE[size]),
        ]
        return actions + [_click(_FORM["newsletter"] if world.newsletter else _FORM["submit"])]

    turns = [[_turn("fill in the form", fill(world.size)), _turn("fill in the form", fill(wrong_size))]]
    if world.newsletter:
        turns.append([_turn("submit", [_click(_FORM["submit"])])])
    return turns + [[_done(f"Registered {world.name}")]]


def _search(world: flights.World) -> list[Candidate]:
    origin, destination, date = world.route
    actions = [
        _select(_FLIGHTS["from"], origin),
        _select(_FLIGHTS["to"], destination),
        _select(_FLIGHTS["date"], date),
        _click(_FLIGHTS["search"]),
    ]
    return [_turn("search the route", actions)]


def _cheapest_and_slip(world: flights.World) -> tuple[int, int, list[flights.Flight]]:
    """Rows of the cheapest flight and of the slip (the row after it) in the search results."""
    found = flights.search_results(world, *world.route)
    if len(found) != len(_FLIGHTS_ROW_LINK):
        raise ValueError(f"the flights candidates expect {len(_FLIGHTS_ROW_LINK)} results per search, found {len(found)}")
    cheapest = min(range(len(found)), key=lambda row: found[row].price)
    return cheapest, (cheapest + 1) % len(found), found


def flights_book(world: flights.World) -> list[list[Candidate]]:
    """Search, select the cheapest (the slip: another row's link), book for the passenger, done."""
    right, wrong, found = _cheapest_and_slip(world)
    if right != len(_FLIGHTS_ROW_LINK) - 1:
        raise ValueError("the booking form's indexes were read after the third row's link: the cheapest must be last")
    pick = [_turn("select the cheapest", [_click(_FLIGHTS_ROW_LINK[row])]) for row in (right, wrong)]
    book = [_type(_FLIGHTS["passenger"], world.passenger), _click(_FLIGHTS["confirm"])]
    return [_search(world), pick, [_turn("book it", book)], [_done(f"Booked {found[right].code}")]]


def flights_cheapest_code(world: flights.World) -> list[list[Candidate]]:
    """Search, then answer with the cheapest flight's number (the slip: another flight's)."""
    right, wrong, found = _cheapest_and_slip(world)
    return [_search(world), [_done(found[right].code), _done(found[wrong].code)]]


# Which goals of which app offer candidates; a world the indexes do not fit is refused.
CHOICES = {
    ("form", "submit"): form_submit,
    ("flights", "book"): flights_book,
    ("flights", "cheapest-code"): flights_cheapest_code,
}
