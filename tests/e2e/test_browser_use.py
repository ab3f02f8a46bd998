"""browser-use, installed at its pinned version, registers a person on the seeded form app
(examples/tasks/web/web-form-submit-1) through the rollout runner and the real recording
proxy: the verifier passes, every call is recorded with its screenshot, and nothing
leaves 127.0.0.1. The scripted model and the shared checks are in tests/e2e/_browser_use.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._browser_use import (
    REPO,
    assert_passed,
    assert_recorded_with_screenshots,
    assert_stayed_on_loopback,
    done,
    element_index,
    run_browser_use,
    scripted_browser_model,
)

TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
ROLLOUT_ID = "web-form-submit-1-s0"
PERSON = json.loads((TASK / "goal.json").read_text())["state"]["submissions"][0]
ANSWER = f"Registered {PERSON['name']}"


def _actions(step: int, page: str) -> list[dict[str, Any]]:
    """What a competent agent does at each step, with this page's element indexes."""
    if step == 0:  # the form: fill in every field (browser-use runs up to 5 actions a step)
        return [
            {"input": {"index": element_index(page, "<input name=name"), "text": PERSON["name"], "clear": True}},
            {"input": {"index": element_index(page, "<input name=email"), "text": PERSON["email"], "clear": True}},
            {"select_dropdown": {"index": element_index(page, "<select name=session"), "text": PERSON["session"]}},
            {"click": {"index": element_index(page, f"<input type=radio name=size value={PERSON['size']} ")}},
            {"click": {"index": element_index(page, "<input type=checkbox name=newsletter")}},
        ]
    if step == 1:
        return [{"click": {"index": element_index(page, r"<button />\s*Submit registration")}}]
    return [done(ANSWER)]


@pytest.mark.slow
def test_browser_use_submits_the_form_through_proxy(chromium_ready: None, tmp_path: Path) -> None:
    with scripted_browser_model(_actions) as model:
        # The script's three steps, two to spare.
        run = run_browser_use(model, TASK, ROLLOUT_ID, tmp_path, max_turns=5)

    assert_passed(run, model, calls=3)
    assert run.outcome.final_answer == ANSWER
    assert_recorded_with_screenshots(run, ROLLOUT_ID)
    assert_stayed_on_loopback(run)
