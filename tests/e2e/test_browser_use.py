"""browser-use, installed at its pinned version, registers a person on the seeded form app
(examples/tasks/web/web-form-submit-1) through the rollout runner and the real recording
proxy: the verifier passes, every call is recorded with its screenshot, and nothing
leaves 127.0.0.1. The model is scripted (tests/e2e/_browser_use.py says why)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._browser_use import agent_reply, browser_use, check_browser_use_calls, done, element_index
from tests.e2e._scripted_model import REPO, run_web_rollout, scripted_model

from components.core.outcome import RolloutStatus

TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
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
    adapter, config = browser_use(max_turns=5)  # the script's three steps, two to spare
    with scripted_model(agent_reply(_actions)) as model:
        rollout = run_web_rollout(config, adapter, model, TASK, tmp_path)

    outcome = rollout.outcome
    assert not model.problems, model.problems
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{rollout.proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.final_answer == ANSWER
    assert len(rollout.calls) == outcome.num_calls == model.steps == 3, [c.response for c in rollout.calls]
    check_browser_use_calls(rollout)
