"""browser-use, installed at its pinned version, registers a person on the seeded form app
(examples/tasks/web/web-form-submit-1) through the rollout runner and the real recording
proxy: the verifier passes, every call is recorded with its screenshot, and nothing
leaves 127.0.0.1.

The model is a scripted upstream (tests/e2e/_scripted_model.py), not the dev engine: browser-use sends
every call as a fresh system + user pair (no assistant turns, so the dev engine's
script, which picks its turn by counting assistant messages, would replay its first
turn forever), and the element indexes its actions need are Chromium's DOM node ids,
different on every run, so each reply is computed from the page text of the request.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._scripted_model import REPO, check_recorded_calls, run_web_rollout, scripted_model

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request
from components.core.outcome import RolloutStatus
from components.rollout.harnesses import get_harness

TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
PERSON = json.loads((TASK / "goal.json").read_text())["state"]["submissions"][0]
ANSWER = f"Registered {PERSON['name']}"


def _index(page: str, pattern: str) -> int:
    match = re.search(r"\[(\d+)\]" + pattern, page)
    if match is None:
        raise LookupError(f"no element matching {pattern!r} on the page")
    return int(match[1])


def _actions(step: int, page: str) -> list[dict[str, Any]]:
    """What a competent agent does at each step, with this page's element indexes."""
    if step == 0:  # the form: fill in every field (browser-use runs up to 5 actions a step)
        return [
            {"input": {"index": _index(page, "<input name=name"), "text": PERSON["name"], "clear": True}},
            {"input": {"index": _index(page, "<input name=email"), "text": PERSON["email"], "clear": True}},
            {"select_dropdown": {"index": _index(page, "<select name=session"), "text": PERSON["session"]}},
            {"click": {"index": _index(page, f"<input type=radio name=size value={PERSON['size']} ")}},
            {"click": {"index": _index(page, "<input type=checkbox name=newsletter")}},
        ]
    if step == 1:
        return [{"click": {"index": _index(page, r"<button />\s*Submit registration")}}]
    return [{"done": {"text": ANSWER, "success": True, "files_to_display": []}}]


def _reply(step: int, body: dict[str, Any]) -> dict[str, Any]:
    """browser-use's ``agent_output`` reply for this step, from the page text of the request."""
    parts = body["messages"][-1]["content"]
    page = parts if isinstance(parts, str) else "\n".join(p.get("text", "") for p in parts)
    actions = _actions(step, page)
    return {"content": json.dumps({"evaluation_previous_goal": "ok", "memory": "", "next_goal": "next", "action": actions})}


def _config() -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "browser-use-e2e",
            "tasks": {"source": "unused"},
            # The script's three steps, two to spare; room for a five-action reply.
            "harness": {"name": "browser-use", "max_turns": 5, "max_tokens": 1024},
            "rollout": {"time_limit_s": 240},
        }
    )


@pytest.mark.slow
def test_browser_use_submits_the_form_through_proxy(chromium_ready: None, tmp_path: Path) -> None:
    adapter = get_harness("browser-use")
    if not adapter.is_installed():
        pytest.skip(f"browser-use {adapter.version} is not installed: run `openforge harness install browser-use`")

    with scripted_model(_reply) as model:
        rollout = run_web_rollout(_config(), adapter, model, TASK, tmp_path)

    outcome = rollout.outcome
    assert not model.problems, model.problems
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{rollout.proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.final_answer == ANSWER
    calls = rollout.calls
    assert len(calls) == outcome.num_calls == model.steps == 3, [c.response for c in calls]
    check_recorded_calls(rollout)
    for call in calls:
        assert call.request["response_format"]["json_schema"]["name"] == "agent_output"
        # One screenshot per call, stored once by hash beside the session and rebuilt exactly.
        parts = call.request["messages"][-1]["content"]
        assert sum("image" in part.get("type", "") for part in parts) == 1, [p.get("type") for p in parts]
        assert len(call.images) == 1
        rebuilt = rebuild_request(call, rollout.sessions / "images")["messages"][-1]["content"]
        assert any(str(part.get("image_url", {}).get("url", "")).startswith("data:image/png;base64,") for part in rebuilt)
    assert outcome.extra["egress_refused"] == [], outcome.extra["egress_refused"]
    if rollout.outside is not None:
        assert not rollout.outside, "connections off loopback:\n" + "\n".join(rollout.outside)
