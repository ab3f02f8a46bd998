"""What the browser-use end-to-end tests add to tests/e2e/_scripted_model.py.

browser-use sends every call as a fresh system + user pair (no assistant turns, so the dev
engine's script, which picks its turn by counting assistant messages, would replay its
first turn forever), and the element indexes its actions need are Chromium's DOM node
ids, which change with the page and what happened before: a test's ``Script`` computes
each step's actions from the page text of the request, and ``agent_reply`` wraps them in browser-use's ``agent_output``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests._missing import require_harness
from tests.e2e._scripted_model import Reply, WebRollout, check_recorded_calls

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request
from components.rollout.harnesses import HarnessAdapter, get_harness

# (step, page text of the request) -> browser-use actions; raise LookupError when lost.
Script = Callable[[int, str], list[dict[str, Any]]]


def element_index(page: str, pattern: str) -> int:
    """The browser-use index (``[12]<button ...``) of the first element matching ``pattern``."""
    match = re.search(r"\[(\d+)\]" + pattern, page)
    if match is None:
        raise LookupError(f"no element matching {pattern!r} on the page")
    return int(match[1])


def done(text: str) -> dict[str, Any]:
    return {"done": {"text": text, "success": True, "files_to_display": []}}


def agent_reply(script: Script) -> Reply:
    """The scripted model's reply: ``script``'s actions for this step as browser-use's ``agent_output``."""

    def reply(step: int, body: dict[str, Any]) -> dict[str, Any]:
        parts = body["messages"][-1]["content"]
        page = parts if isinstance(parts, str) else "\n".join(p.get("text", "") for p in parts)
        output = {"evaluation_previous_goal": "ok", "memory": "", "next_goal": "next", "action": script(step, page)}
        return {"content": json.dumps(output)}

    return reply


def browser_use(max_turns: int) -> tuple[HarnessAdapter, ExperimentConfig]:
    """The installed adapter (else the test is skipped, or fails under CI=true) and a config with room for a five-action reply."""
    require_harness("browser-use")
    adapter = get_harness("browser-use")
    config = ExperimentConfig.model_validate(
        {
            "name": "browser-use-e2e",
            "tasks": {"source": "unused"},
            "harness": {"name": "browser-use", "max_turns": max_turns, "max_tokens": 1024},
            "rollout": {"time_limit_s": 240},
        }
    )
    return adapter, config


def check_browser_use_calls(rollout: WebRollout) -> None:
    """``check_recorded_calls``, and each call is an ``agent_output`` request with exactly one PNG screenshot."""
    check_recorded_calls(rollout)
    for call in rollout.calls:
        assert call.request["response_format"]["json_schema"]["name"] == "agent_output"
        parts = call.request["messages"][-1]["content"]
        assert sum("image" in part.get("type", "") for part in parts) == 1, [p.get("type") for p in parts]
        assert len(call.images) == 1
        rebuilt = rebuild_request(call, rollout.sessions / "images")["messages"][-1]["content"]
        assert any(str(part.get("image_url", {}).get("url", "")).startswith("data:image/png;base64,") for part in rebuilt)
    assert rollout.outcome.extra["egress_refused"] == [], rollout.outcome.extra["egress_refused"]
    if rollout.outside is not None:
        assert not rollout.outside, "connections off loopback:\n" + "\n".join(rollout.outside)
