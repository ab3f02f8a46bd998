"""browser-use solves a MiniWoB++ episode (examples/tasks/miniwob/miniwob-click-button-1)
through the rollout runner and the real recording proxy: the page's own reward reaches the
verifier, every call is recorded with its screenshot, and nothing leaves 127.0.0.1.
The scripted model (tests/e2e/_browser_use.py) reads the utterance from the prompt and
clicks the button it names, by the index browser-use gives that button on this run."""

from __future__ import annotations

import json
import re
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

TASK = REPO / "examples" / "tasks" / "miniwob" / "miniwob-click-button-1"
ROLLOUT_ID = "miniwob-click-button-1-s0"
UTTERANCE = json.loads((TASK / "goal.json").read_text())["state"]["result"]["utterance"]


def _actions(step: int, page: str) -> list[dict[str, Any]]:
    if step == 0:
        if UTTERANCE not in page:  # the runner put the page's utterance into the prompt
            raise LookupError(f"the task {UTTERANCE!r} is not in the request")
        label = re.search(r'"([^"]+)"', UTTERANCE)[1]
        return [{"click": {"index": element_index(page, rf"<button />\s*{re.escape(label)}\n")}}]
    return [done("Clicked it.")]


@pytest.mark.slow
def test_browser_use_solves_a_miniwob_episode_through_proxy(chromium_ready: None, tmp_path: Path) -> None:
    with scripted_browser_model(_actions) as model:
        run = run_browser_use(model, TASK, ROLLOUT_ID, tmp_path, max_turns=4)

    assert_passed(run, model, calls=2)
    assert_recorded_with_screenshots(run, ROLLOUT_ID)
    assert_stayed_on_loopback(run)
