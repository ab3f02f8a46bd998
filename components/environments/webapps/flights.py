"""Flights: search a route and a date, compare, book. Seeded cities, timetable, prices and passenger."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from components.environments.webapps.goal import URL_PLACEHOLDER, Goal
from components.environments.webapps.pages import error, options, page
from components.environments.webapps.seeding import CITIES, person, world_rng

if TYPE_CHECKING:  # aiohttp loads when a site is served, not when a rollout's runner imports the app
    from aiohttp import web

NAV = "<a href='/'>Search flights</a>"


@dataclass(frozen=True)
class Flight:
    code: str
    origin: str
    destination: str
    date: str
    departs: str
    price: int


@dataclass(frozen=True)
class World:
    cities: tuple[str, ...]
    dates: tuple[str, ...]
    flights: tuple[Flight, ...]
    passenger: str
    route: tuple[str, str, str]  # origin, destination, date of the task


def build_world(seed: int) -> World:
    rng = world_rng("flights", seed)
    cities = tuple(sorted(rng.sample(CITIES, 5)))
    first = dt.date(2027, 1, 1) + dt.timedelta(days=rng.randint(0, 330))
    dates = tuple((first + dt.timedelta(days=d)).isoformat() for d in range(3))
    codes = iter(rng.sample(range(100, 1000), 200))
    flights = []
    for origin in cities:
        for destination in cities:
            if origin == destination:
                continue
            for date in dates:
                # Distinct prices per search make "the cheapest" unambiguous; listed by time, not price.
                prices = rng.sample(range(49, 400), 3)
                hours = sorted(rng.sample(range(6, 22), 3))
                for hour, price in zip(hours, prices):
                    departs = f"{hour:02d}:{rng.choice((0, 15, 30, 45)):02d}"
                    flights.append(Flight(f"OF{next(codes)}", origin, destination, date, departs, price))
    origin, destination = rng.sample(cities, 2)
    return World(cities, dates, tuple(flights), person(rng), (origin, destination, rng.choice(dates)))


def search_results(world: World, origin: str, destination: str, date: str) -> list[Flight]:
    return [f for f in world.flights if (f.origin, f.destination, f.date) == (origin, destination, date)]


def goals(world: World) -> dict[str, Goal]:
    origin, destination, date = world.route
    found = search_results(world, origin, destination, date)
    cheapest = min(found, key=lambda f: f.price)
    trip = f"from {origin} to {destination} on {date}"
    book = Goal(
        prompt=f"Open {URL_PLACEHOLDER} in the browser. Book the cheapest flight {trip} for passenger "
        f"{world.passenger}. Book nothing else.",
        expect={"state": {"bookings": [{"flight": cheapest.code, "passenger": world.passenger}]}},
    )
    cheapest_code = Goal(
        prompt=f"Open {URL_PLACEHOLDER} in the browser and find the cheapest flight {trip}. Do not book anything. "
        "Answer with its flight number only.",
        expect={
            "state": {"bookings": []},
            "answer_contains": cheapest.code,
            "answer_excludes": sorted(f.code for f in found if f is not cheapest),
        },
    )
    return {"book": book, "cheapest-code": cheapest_code}


def new_state() -> dict:
    return {"bookings": []}


def add_routes(app: web.Application, world: World, state: dict) -> None:
    from aiohttp import web

    by_code = {f.code: f for f in world.flights}
    cities = list(world.cities)

    def search_form(origin: str = "", destination: str = "", date: str = "") -> str:
        return (
            "<form action='/search'>"
            f"<label>From <select name='from'>{options(cities, origin)}</select></label>"
            f"<label>To <select name='to'>{options(cities, destination)}</select></label>"
            f"<label>Date <select name='date'>{options(list(world.dates), date)}</select></label>"
            "<button>Search</button></form>"
        )

    async def index(request: web.Request) -> web.Response:
        return page("Search flights", search_form(), NAV)

    async def search(request: web.Request) -> web.Response:
        origin, destination, date = (request.query.get(k, "") for k in ("from", "to", "date"))
        found = search_results(world, origin, destination, date)
        rows = "".join(
            f"<tr><td>{f.code}</td><td>{f.departs}</td><td>${f.price}</td>"
            f"<td><a href='/book/{f.code}'>Select {f.code}</a></td></tr>"
            for f in found
        )
        table = (
            f"<table><tr><th>Flight</th><th>Departs</th><th>Price</th><th></th></tr>{rows}</table>"
            if found else "<p>No flights found for this search.</p>"
        )
        return page(f"Flights {origin} to {destination}, {date}", search_form(origin, destination, date) + table, NAV)

    def book_page(flight: Flight, message: str = "", status: int = 200) -> web.Response:
        body = (
            f"{error(message)}<p>{flight.code}: {flight.origin} to {flight.destination}, {flight.date} at "
            f"{flight.departs}, ${flight.price}</p><form method='post' action='/book'>"
            f"<input type='hidden' name='flight' value='{flight.code}'>"
            "<label>Passenger name <input name='passenger' autocomplete='off'></label>"
            "<button>Confirm booking</button></form>"
        )
        return page(f"Book flight {flight.code}", body, NAV, status=status)

    async def book_form(request: web.Request) -> web.Response:
        flight = by_code.get(request.match_info["code"])
        if flight is None:
            raise web.HTTPNotFound(text="no such flight")
        return book_page(flight)

    async def book(request: web.Request) -> web.Response:
        form = await request.post()
        flight = by_code.get(str(form.get("flight", "")))
        if flight is None:
            raise web.HTTPBadRequest(text="no such flight")
        passenger = str(form.get("passenger", "")).strip()
        if not passenger:
            return book_page(flight, "Enter the passenger's name.", status=400)
        reference = f"B{len(state['bookings']) + 1:04d}"
        state["bookings"].append(
            {"reference": reference, "flight": flight.code, "passenger": passenger, "date": flight.date,
             "price": flight.price}
        )
        return page("Booking confirmed", f"<p>Booking {reference}: {escape(passenger)} on {flight.code}.</p>", NAV)

    app.router.add_get("/", index)
    app.router.add_get("/search", search)
    app.router.add_get("/book/{code}", book_form)
    app.router.add_post("/book", book)
