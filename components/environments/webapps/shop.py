"""The shop: search the catalogue, add to the cart, check out. Seeded products, prices and buyer."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

from components.environments.webapps.goal import URL_PLACEHOLDER, Goal
from components.environments.webapps.pages import error, page
from components.environments.webapps.seeding import COLOURS, MATERIALS, PRODUCTS, money, person, world_rng

if TYPE_CHECKING:  # aiohttp loads when a site is served, not when a rollout's runner imports the app
    from aiohttp import web

NAV = "<a href='/'>Catalogue</a><a href='/cart'>Cart</a>"
_SEARCH = (
    "<form action='/search' role='search'><label>Search <input name='q' type='search'></label>"
    "<button>Search</button></form>"
)


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    kind: str
    cents: int


@dataclass(frozen=True)
class World:
    items: tuple[Item, ...]
    kinds: tuple[str, ...]
    buyer: str
    qty: int
    target_kind: str


def build_world(seed: int) -> World:
    rng = world_rng("shop", seed)
    kinds = tuple(rng.sample(PRODUCTS, 4))
    # Distinct prices make "the cheapest" of a kind unambiguous.
    prices = iter(rng.sample(range(399, 12999), 3 * len(kinds)))
    items = []
    for kind in kinds:
        for colour, material in rng.sample([(c, m) for c in COLOURS for m in MATERIALS], 3):
            items.append(Item(f"p{len(items) + 1:02d}", f"{colour.title()} {material} {kind}", kind, next(prices)))
    rng.shuffle(items)
    return World(tuple(items), kinds, person(rng), rng.randint(2, 4), rng.choice(kinds))


def goals(world: World) -> dict[str, Goal]:
    cheapest = min((i for i in world.items if i.kind == world.target_kind), key=lambda i: i.cents)
    checkout = Goal(
        prompt=(
            f"Open {URL_PLACEHOLDER} in the browser. Buy {world.qty} of the cheapest {world.target_kind} the shop "
            f"sells: put exactly {world.qty} of it in the cart and check out with the name {world.buyer}. "
            "Buy nothing else."
        ),
        expect={"state": {"orders": [{"customer": world.buyer, "items": [{"id": cheapest.id, "qty": world.qty}]}]}},
    )
    return {"checkout": checkout}


def new_state() -> dict:
    return {"cart": [], "orders": []}


def add_routes(app: web.Application, world: World, state: dict) -> None:
    from aiohttp import web

    by_id = {item.id: item for item in world.items}

    def listing(items: list[Item]) -> str:
        rows = "".join(
            f"<tr><td><a href='/item/{i.id}'>{escape(i.name)}</a></td><td>{money(i.cents)}</td></tr>" for i in items
        )
        return f"<table><tr><th>Product</th><th>Price</th></tr>{rows}</table>" if items else "<p>No products found.</p>"

    async def index(request: web.Request) -> web.Response:
        return page("Catalogue", _SEARCH + listing(list(world.items)), NAV)

    async def search(request: web.Request) -> web.Response:
        query = request.query.get("q", "").strip().lower()
        found = [i for i in world.items if query in i.name.lower()]
        return page(f"Results for “{query}”", _SEARCH + listing(found), NAV)

    async def item(request: web.Request) -> web.Response:
        it = by_id.get(request.match_info["id"])
        if it is None:
            raise web.HTTPNotFound(text="no such product")
        form = (
            f"<p>Price: {money(it.cents)}</p><form method='post' action='/cart/add'>"
            f"<input type='hidden' name='id' value='{it.id}'>"
            "<label>Quantity <input name='qty' type='number' min='1' max='99' value='1'></label>"
            "<button>Add to cart</button></form>"
        )
        return page(it.name, form, NAV)

    async def cart_add(request: web.Request) -> web.Response:
        form = await request.post()
        it = by_id.get(str(form.get("id", "")))
        qty = str(form.get("qty", "1")).strip()
        if it is None or not qty.isdigit() or not 1 <= int(qty) <= 99:
            raise web.HTTPBadRequest(text="choose a product and a quantity from 1 to 99")
        line = next((line for line in state["cart"] if line["id"] == it.id), None)
        if line is None:
            state["cart"].append({"id": it.id, "name": it.name, "qty": int(qty), "price": it.cents / 100})
        else:
            line["qty"] += int(qty)
        raise web.HTTPSeeOther("/cart")

    async def cart_remove(request: web.Request) -> web.Response:
        form = await request.post()
        state["cart"] = [line for line in state["cart"] if line["id"] != form.get("id")]
        raise web.HTTPSeeOther("/cart")

    def cart_page(message: str = "") -> web.Response:
        rows = "".join(
            f"<tr><td>{escape(line['name'])}</td><td>{line['qty']}</td><td>{money(round(line['price'] * 100))}</td>"
            f"<td><form method='post' action='/cart/remove'><input type='hidden' name='id' value='{line['id']}'>"
            "<button>Remove</button></form></td></tr>"
            for line in state["cart"]
        )
        total = sum(round(line["price"] * 100) * line["qty"] for line in state["cart"])
        body = error(message) + (
            f"<table><tr><th>Product</th><th>Quantity</th><th>Price</th><th></th></tr>{rows}</table>"
            f"<p>Total: {money(total)}</p><form method='post' action='/checkout'>"
            "<label>Name <input name='name' autocomplete='off'></label><button>Place order</button></form>"
            if state["cart"] else "<p>Your cart is empty.</p>"
        )
        return page("Cart", body, NAV)

    async def cart(request: web.Request) -> web.Response:
        return cart_page()

    async def checkout(request: web.Request) -> web.Response:
        name = str((await request.post()).get("name", "")).strip()
        if not state["cart"]:
            return cart_page()
        if not name:
            return cart_page("Enter the name for the order.")
        total = sum(round(line["price"] * 100) * line["qty"] for line in state["cart"])
        number = len(state["orders"]) + 1
        state["orders"].append({"number": number, "customer": name, "items": state["cart"], "total": total / 100})
        state["cart"] = []
        thanks = f"<p>Thank you, {escape(name)}. Order #{number} is placed ({money(total)}).</p>"
        return page("Order placed", thanks, NAV)

    app.router.add_get("/", index)
    app.router.add_get("/search", search)
    app.router.add_get("/item/{id}", item)
    app.router.add_post("/cart/add", cart_add)
    app.router.add_post("/cart/remove", cart_remove)
    app.router.add_get("/cart", cart)
    app.router.add_post("/checkout", checkout)
