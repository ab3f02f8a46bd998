"""The form: a conference registration to fill in and submit. Seeded event, sessions and registrant."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from components.environments.webapps.goal import URL_PLACEHOLDER, Goal
from components.environments.webapps.pages import error, options, page
from components.environments.webapps.seeding import CITIES, FIRST_NAMES, FORMATS, TOPICS, person, world_rng

if TYPE_CHECKING:  # aiohttp loads when a site is served, not when a rollout's runner imports the app
    from aiohttp import web

SIZES = ("S", "M", "L", "XL")


@dataclass(frozen=True)
class World:
    event: str
    sessions: tuple[str, ...]
    name: str
    email: str
    session: str
    size: str
    newsletter: bool


def build_world(seed: int) -> World:
    rng = world_rng("form", seed)
    sessions = tuple(f"{topic} {fmt}" for topic, fmt in zip(rng.sample(TOPICS, 5), rng.choices(FORMATS, k=5)))
    name = person(rng)
    first, last = name.lower().split()
    return World(
        event=f"{rng.choice(CITIES)} {rng.choice(TOPICS)} Days",
        sessions=sessions,
        name=name,
        email=f"{first}.{last}{rng.randint(1, 99)}@example.org",
        session=rng.choice(sessions),
        size=rng.choice(SIZES),
        newsletter=rng.random() < 0.5,
    )


def goals(world: World) -> dict[str, Goal]:
    newsletter = "subscribe to" if world.newsletter else "do not subscribe to"
    submit = Goal(
        prompt=(
            f"Open {URL_PLACEHOLDER} in the browser. Register {world.name} (email {world.email}) for the "
            f"{world.event} session \"{world.session}\" with T-shirt size {world.size}, and {newsletter} the "
            "newsletter. Submit the form once."
        ),
        expect={
            "state": {
                "submissions": [
                    {"name": world.name, "email": world.email, "session": world.session, "size": world.size,
                     "newsletter": world.newsletter}
                ]
            }
        },
    )
    return {"submit": submit}


def new_state() -> dict:
    return {"submissions": []}


def add_routes(app: web.Application, world: World, state: dict) -> None:
    def form_page(message: str = "", values: dict | None = None, status: int = 200) -> web.Response:
        values = values or {}
        sizes = "".join(
            f"<label><input type='radio' name='size' value='{s}'{' checked' if values.get('size') == s else ''}>"
            f" {s}</label>"
            for s in SIZES
        )
        body = (
            f"{error(message)}<form method='post' action='/submit'>"
            f"<label>Full name <input name='name' value='{escape(values.get('name', ''))}'></label>"
            f"<label>Email <input name='email' type='email' value='{escape(values.get('email', ''))}'></label>"
            "<label>Session <select name='session'><option value=''>Choose a session</option>"
            f"{options(list(world.sessions), values.get('session', ''))}</select></label>"
            f"<fieldset><legend>T-shirt size</legend>{sizes}</fieldset>"
            "<label><input type='checkbox' name='newsletter' value='yes'> Send me the newsletter</label>"
            "<button>Submit registration</button></form>"
        )
        return page(f"Register for {world.event}", body, status=status)

    async def index(request: web.Request) -> web.Response:
        return form_page()

    async def submit(request: web.Request) -> web.Response:
        form = await request.post()
        values = {key: str(form.get(key, "")).strip() for key in ("name", "email", "session", "size")}
        email = values["email"]
        problems = [
            "Enter your full name." if not values["name"] else "",
            "Enter a valid email address." if "@" not in email or "." not in email.split("@")[-1] else "",
            "Choose a session." if values["session"] not in world.sessions else "",
            "Choose a T-shirt size." if values["size"] not in SIZES else "",
        ]
        message = " ".join(p for p in problems if p)
        if message:
            return form_page(message, values, status=400)
        state["submissions"].append({**values, "newsletter": form.get("newsletter") == "yes"})
        number = len(state["submissions"])
        return page("Registration received", f"<p>Thank you, {escape(values['name'])}. Registration #{number}.</p>")

    app.router.add_get("/", index)
    app.router.add_post("/submit", submit)
