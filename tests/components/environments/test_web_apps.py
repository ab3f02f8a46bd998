"""Each seeded app driven through real Chromium (Playwright) to the goal and to a wrong state;
the task's own verify.py must tell them apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.components.environments._verify import run_verifier

from components.environments import BrowserEnvironment, start_web_task
from components.environments.webapps import flights, form, shop

WEB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "web"


def _buy(page, url: str, item: shop.Item, qty: int, buyer: str) -> None:
    page.goto(url)
    page.get_by_label("Search").fill(item.kind)
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name=item.name).click()
    page.get_by_label("Quantity").fill(str(qty))
    page.get_by_role("button", name="Add to cart").click()
    page.get_by_label("Name").fill(buyer)
    page.get_by_role("button", name="Place order").click()
    page.get_by_text("is placed").wait_for()


@pytest.mark.parametrize("right", [True, False], ids=["goal", "not-the-cheapest"])
def test_shop_checkout(browser: BrowserEnvironment, tmp_path: Path, right: bool) -> None:
    task_dir = WEB_TASKS / "web-shop-checkout-1"
    world = shop.build_world(1)
    of_kind = sorted((i for i in world.items if i.kind == world.target_kind), key=lambda i: i.cents)
    with start_web_task(task_dir) as web:
        browser.reset()
        _buy(browser.page, web.url, of_kind[0] if right else of_kind[1], world.qty, world.buyer)
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == ((True, 1.0) if right else (False, 0.0))


def test_shop_search_narrows_the_catalogue(browser: BrowserEnvironment) -> None:
    world = shop.build_world(2)
    with start_web_task(WEB_TASKS / "web-shop-checkout-2") as web:
        browser.reset(f"{web.url}/search?q={world.target_kind}")
        assert browser.page.get_by_role("link").filter(has_text=world.target_kind).count() == 3
        assert browser.page.locator("table tr").count() == 1 + 3


@pytest.mark.parametrize("right", [True, False], ids=["goal", "wrong-size"])
def test_form_submit(browser: BrowserEnvironment, tmp_path: Path, right: bool) -> None:
    task_dir = WEB_TASKS / "web-form-submit-2"
    world = form.build_world(2)
    with start_web_task(task_dir) as web:
        browser.reset(web.url)
        page = browser.page
        page.get_by_role("button", name="Submit registration").click()
        assert "Enter your full name." in page.get_by_role("alert").inner_text()  # nothing recorded
        page.get_by_label("Full name").fill(world.name)
        page.get_by_label("Email").fill(world.email)
        page.get_by_label("Session").select_option(world.session)
        size = world.size if right else next(s for s in form.SIZES if s != world.size)
        page.get_by_label(size, exact=True).check()
        page.get_by_label("Send me the newsletter").set_checked(world.newsletter)
        page.get_by_role("button", name="Submit registration").click()
        page.get_by_text("Registration #1").wait_for()
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == ((True, 1.0) if right else (False, 0.0))


def _search_flights(page, url: str, world: flights.World) -> list[flights.Flight]:
    origin, destination, date = world.route
    page.goto(url)
    page.get_by_label("From").select_option(origin)
    page.get_by_label("To").select_option(destination)
    page.get_by_label("Date").select_option(date)
    page.get_by_role("button", name="Search").click()
    found = flights.search_results(world, origin, destination, date)
    assert page.locator("table tr").count() == 1 + len(found)
    return sorted(found, key=lambda f: f.price)


@pytest.mark.parametrize("right", [True, False], ids=["goal", "dearer-flight"])
def test_flights_book(browser: BrowserEnvironment, tmp_path: Path, right: bool) -> None:
    task_dir = WEB_TASKS / "web-flights-book-1"
    world = flights.build_world(1)
    with start_web_task(task_dir) as web:
        browser.reset()
        by_price = _search_flights(browser.page, web.url, world)
        chosen = by_price[0] if right else by_price[-1]
        browser.page.get_by_role("link", name=f"Select {chosen.code}").click()
        browser.page.get_by_label("Passenger name").fill(world.passenger)
        browser.page.get_by_role("button", name="Confirm booking").click()
        browser.page.get_by_text("Booking B0001").wait_for()
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == ((True, 1.0) if right else (False, 0.0))


def test_flights_cheapest_code(browser: BrowserEnvironment, tmp_path: Path) -> None:
    task_dir = WEB_TASKS / "web-flights-cheapest-code-2"
    world = flights.build_world(2)
    with start_web_task(task_dir) as web:
        browser.reset()
        by_price = _search_flights(browser.page, web.url, world)
        cheapest, dearest = by_price[0].code, by_price[-1].code
        env = web.verifier_env()
        assert run_verifier(task_dir, tmp_path, env, answer=f"The cheapest is {cheapest}.") == (True, 1.0)
        assert run_verifier(task_dir, tmp_path, env, answer=dearest) == (False, 0.0)
        # Naming every choice is not an answer.
        assert run_verifier(task_dir, tmp_path, env, answer=f"{cheapest} or {dearest}") == (False, 0.0)
        # It was told not to book: the right answer after a booking fails.
        browser.page.get_by_role("link", name=f"Select {cheapest}").click()
        browser.page.get_by_label("Passenger name").fill(world.passenger)
        browser.page.get_by_role("button", name="Confirm booking").click()
        browser.page.get_by_text("Booking B0001").wait_for()
        assert run_verifier(task_dir, tmp_path, env, answer=cheapest) == (False, 0.0)
