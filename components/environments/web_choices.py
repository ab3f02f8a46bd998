"""Candidate turns for browser-use on the seeded web tasks (choice mode, docs/engine.md).

A random tiny model never writes browser-use's JSON, let alone the right element index.
In choice mode each assistant turn offers candidates: browser-use's ``agent_output`` with
the right action and one with a slip (the wrong element, the wrong answer), the last turn
browser-use's ``done`` (it accepts ``done`` only as a step's single action). The policy
draws among them by its own probabilities, the app's state decides the reward, and
training can move the draw (``examples/web.yaml``, ``make bench-gui-learning``).

Candidates name each element by what browser-use's listing says of it
(``{{element:<input name=name}}``, components/core/choices.py); the engine writes in the
``[N]`` the request shows. Those numbers are Chromium's DOM node ids: a fresh browser
(every rollout gets one) numbers the same page differently from time to time (every id
one higher, or the results' links three further on), so numbers written here were wrong
in about half the rollouts, which then failed whatever the policy drew. The wrong
candidate of a turn differs from the right one in the element or answer it names, the
same number of tokens once resolved (a test checks it), so neither is favoured before
learning.

The numbers also make poor things to learn: the right click is ``225`` in one rollout and
``226`` in the next, so raising the first taught the policy nothing it could use again
(in a browser-use run the right candidate's probability fell from 0.67 to 0.47 over
iterations whose groups rewarded it). So each candidate's ``next_goal`` says what it
picks in words that do not move between browsers: the size's place in the form's list,
the cheaper or the pricier flight or product. They come before the action in the
candidate, so the policy's draw is mostly learned there. Words, not numbers, where tasks
share them: a tiny model learns digits more than their contexts. Raising
flights-cheapest-code's right answer (OF674) lowered flights-book's right pick (OF279,
against OF687) from 0.41 to 0.08 in one iteration whose flights-book group had no signal
of its own. The shop's right pick ("product 1", against "product 2") fell from 0.82 to
0.48 in the iteration that raised the form's "size option 2", its own group having drawn
right twice (no signal). "cheaper" and "pricier" mean the same in every task that asks
for the cheapest, as a task's words would.
"""

from __future__ import annotations

import json
import re
from typing import Any

from components.core.choices import element_ref
from components.environments.webapps import flights, form, shop

Action = dict[str, Any]
Candidate = dict[str, str]  # a ScriptedTurn (components/core/scripted_turns.py) as task.yaml holds it

# How browser-use lists each element (its DOM serializer: the tag, then the attributes
# that identify it; a button or link followed by its text).
_FORM = {
    "name": "<input name=name",
    "email": "<input name=email",
    "session": "<select name=session",
    "newsletter": "<input type=checkbox name=newsletter",
    "submit": "<button /> Submit registration",
}
_FORM_SIZE = "<input type=radio name=size value={}"
_FLIGHTS = {
    "from": "<select name=from",
    "to": "<select name=to",
    "date": "<select name=date",
    "search": "<button /> Search",
    "passenger": "<input name=passenger",
    "confirm": "<button /> Confirm booking",
}
_FLIGHTS_ROW_LINK = "<a /> Select {}"  # the results' link of the flight with that code
_SHOP = {
    "qty": "<input name=qty",
    "add": "<button /> Add to cart",
    "name": "<input name=name",
    "order": "<button /> Place order",
}
_SHOP_ITEM_LINK = "<a /> {}"  # the catalogue's link of the product with that name
# What a pick between the cheapest and another says it picks; the same tokens in every task
# that asks for the cheapest, and as many of them for either word.
_CHEAPER, _PRICIER = "cheaper", "pricier"
# json.dumps quotes a reference; the index browser-use reads is a number.
_QUOTED_REF = re.compile(r'"(\{\{element:[^"]*\}\})"')


def _turn(next_goal: str, actions: list[Action]) -> Candidate:
    """browser-use's ``agent_output``: its schema requires these four fields."""
    output = {"evaluation_previous_goal": "", "memory": "", "next_goal": next_goal, "action": actions}
    return {"content": _QUOTED_REF.sub(r"\1", json.dumps(output, separators=(",", ":")))}


def _done(text: str) -> Candidate:
    return _turn("finish", [{"done": {"text": text, "success": True}}])


def _click(element: str) -> Action:
    return {"click": {"index": element_ref(element)}}


def _type(element: str, text: str) -> Action:
    return {"input": {"index": element_ref(element), "text": text, "clear": True}}


def _select(element: str, text: str) -> Action:
    return {"select_dropdown": {"index": element_ref(element), "text": text}}


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
            _click(_FORM_SIZE.format(size)),
        ]
        return actions + [_click(_FORM["newsletter"] if world.newsletter else _FORM["submit"])]

    def goal(size: str) -> str:  # the size's place in the list: "XL" costs more tokens than "M"
        return f"fill in the form, size option {form.SIZES.index(size) + 1}"

    turns = [[_turn(goal(size), fill(size)) for size in (world.size, wrong_size)]]
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
    if len(found) < 2:
        raise ValueError(f"the flights candidates need two results or more to offer a slip, found {len(found)}")
    cheapest = min(range(len(found)), key=lambda row: found[row].price)
    slip = (cheapest + 1) % len(found)
    if found[slip].price == found[cheapest].price:
        raise ValueError(f"flights {found[cheapest].code} and {found[slip].code} cost the same: no cheaper one to offer")
    return cheapest, slip, found


def flights_book(world: flights.World) -> list[list[Candidate]]:
    """Search, select the cheapest (the slip: another row's link), book for the passenger, done."""
    right, wrong, found = _cheapest_and_slip(world)
    pick = [
        _turn(f"select the {label} flight", [_click(_FLIGHTS_ROW_LINK.format(found[row].code))])
        for row, label in ((right, _CHEAPER), (wrong, _PRICIER))
    ]
    book = [_type(_FLIGHTS["passenger"], world.passenger), _click(_FLIGHTS["confirm"])]
    return [_search(world), pick, [_turn("book it", book)], [_done(f"Booked {found[right].code}")]]


def flights_cheapest_code(world: flights.World) -> list[list[Candidate]]:
    """Search, then answer with the cheapest flight's number (the slip: another flight's)."""
    right, wrong, found = _cheapest_and_slip(world)
    return [_search(world), [_done(found[right].code), _done(found[wrong].code)]]


def shop_checkout(world: shop.World) -> list[list[Candidate]]:
    """Open the cheapest product of the kind (the slip: the next cheapest), add the quantity
    to the cart, order under the buyer's name, done."""
    kind = sorted((item for item in world.items if item.kind == world.target_kind), key=lambda item: item.cents)
    if len(kind) < 2:
        raise ValueError(f"the shop candidates need two {world.target_kind} products or more to offer a slip")
    pick = [
        _turn(f"open the {label} product", [_click(_SHOP_ITEM_LINK.format(item.name))])
        for item, label in zip(kind[:2], (_CHEAPER, _PRICIER))
    ]
    add = [_type(_SHOP["qty"], str(world.qty)), _click(_SHOP["add"])]
    order = [_type(_SHOP["name"], world.buyer), _click(_SHOP["order"])]
    return [pick, [_turn("add to the cart", add)], [_turn("check out", order)], [_done(f"Ordered {world.qty}")]]


# Which goals of which app offer candidates.
CHOICES = {
    ("shop", "checkout"): shop_checkout,
    ("form", "submit"): form_submit,
    ("flights", "book"): flights_book,
    ("flights", "cheapest-code"): flights_cheapest_code,
}
