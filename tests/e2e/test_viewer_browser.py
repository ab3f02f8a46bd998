"""The trajectory viewer (`openforge view`) in a real headless Chromium, driven by Playwright
as the browser environment launches it (components/environments/browser.py): a person's
walk from the run to a rollout's conversation and its training view, over the quickstart's
real iteration and over a real web iteration whose screenshots load from the image store.

``OPENFORGE_REGEN_GOLDEN=1`` also writes the pages' screenshots to docs/images/viewer-*.png
(docs/operations.md shows them); review them before committing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.components.viewer._batch import trained_tokens_by_rollout
from tests.components.viewer._serve import start_viewer

from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from components.viewer import links

REPO = Path(__file__).resolve().parents[2]
DOC_IMAGES = REPO / "docs" / "images"
REGEN = os.environ.get("OPENFORGE_REGEN_GOLDEN") == "1"
TRAINED_GREEN = "rgb(199, 240, 210)"  # .t-trained in components/viewer/_html.py


@contextmanager
def _browser_page() -> Iterator[Any]:
    from components.environments.browser import BrowserEnvironment

    with BrowserEnvironment() as browser:
        page = browser.page
        page.set_viewport_size({"width": 1280, "height": 860})
        page.set_default_timeout(120_000)  # the first training view loads veRL and a tokenizer
        yield page


def _doc_shot(page: Any, name: str) -> None:
    if REGEN:
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOC_IMAGES / f"viewer-{name}.png"))


def _open_training_view(page: Any, expected_trained: int) -> None:
    """From a rollout's page: its training view shows exactly the batch's trained tokens, each green."""
    page.click("#training-link")
    page.wait_for_selector("#trained")
    assert int(page.inner_text("#trained")) == expected_trained > 0
    assert page.locator(".tokens .t-trained").count() == expected_trained, "one coloured span per trained token"
    colour = page.eval_on_selector(".tokens .t-trained", "el => getComputedStyle(el).backgroundColor")
    assert colour == TRAINED_GREEN
    assert page.get_attribute(".tokens .t-trained", "title").startswith("logprob ")
    page.locator(".tokens .t-trained").first.scroll_into_view_if_needed()


@pytest.mark.slow
@pytest.mark.timeout(900)  # the quickstart iteration of its fixture, then veRL's first load: 130 s idle, past 300 s on CI's loaded cores
def test_the_quickstart_run_walks_from_the_run_to_what_the_trainer_saw(
    chromium_ready: None, quickstart_store: tuple[str, Path], tmp_path: Path
) -> None:
    uri, work = quickstart_store
    store, layout = open_store(uri), RunLayout("quickstart")
    trained = trained_tokens_by_rollout(store, layout, 0, tmp_path)
    rollout_id = sorted(rid for rid, n in trained.items() if n)[0]
    first_prompt = json.loads(store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()[-1])["request"]["messages"][0]

    with start_viewer(uri, tmp_path / "logs", f"sqlite:///{work / 'mlflow.db'}") as viewer, _browser_page() as page:
        page.goto(viewer.url + "/")
        page.click(f'a[href="{links.run_path("quickstart")}"]')
        assert page.inner_text("h1") == "Run quickstart"
        page.click(f'a[href="{links.iteration_path("quickstart", 0)}"]')
        assert page.inner_text("h1") == "quickstart, iteration 0"
        assert "#/experiments/" in page.get_attribute("#mlflow-run", "href")
        plan = json.loads(store.get_bytes(layout.plan(0)))
        assert page.locator("a[href*='/rollouts/']").count() == len(plan["rollouts"])
        _doc_shot(page, "iteration")

        page.click(f'a[href="{links.rollout_path("quickstart", 0, rollout_id)}"]')
        messages = page.locator(".msg").all_inner_texts()
        assert any(" ".join(first_prompt["content"].split()) in " ".join(m.split()) for m in messages), messages[:2]
        _doc_shot(page, "rollout")

        _open_training_view(page, trained[rollout_id])
        _doc_shot(page, "training")


@pytest.mark.slow
@pytest.mark.timeout(900)  # may be the first to run the session's web iteration (~220 s in CI)
def test_a_web_rollout_shows_its_screenshots_from_the_image_store_and_what_the_trainer_saw(
    gui_vl_run, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run = gui_vl_run("web", request)  # the session's web iteration, shared with test_iteration_gui_vision.py
    name, store, layout = run.config.name, open_store(run.config.storage.uri), RunLayout(run.config.name)
    trained = trained_tokens_by_rollout(store, layout, 0, tmp_path)
    rollout_id = sorted(rid for rid, n in trained.items() if n)[0]
    last = RecordedCall.model_validate_json(store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()[-1])
    assert last.images, "a web rollout's calls carry the screenshots"

    with start_viewer(run.config.storage.uri, tmp_path / "logs", run.config.tracking.uri) as viewer, _browser_page() as page:
        page.goto(viewer.url + links.iteration_path(name, 0))
        page.click(f'a[href="{links.rollout_path(name, 0, rollout_id)}"]')
        page.wait_for_function("() => [...document.images].every(img => img.complete)")
        shots = page.eval_on_selector_all("img.shot", "els => els.map(e => [e.naturalWidth, e.naturalHeight, e.src])")
        assert shots, "the conversation shows the screenshots"
        for width, height, src in shots:
            assert width > 0 and height > 0, f"{src} did not load"
            assert src.startswith(viewer.url + links.image_path(name, 0, ""))
        page.locator("img.shot").first.scroll_into_view_if_needed()
        _doc_shot(page, "web-rollout")

        _open_training_view(page, trained[rollout_id])
        _doc_shot(page, "web-training")
