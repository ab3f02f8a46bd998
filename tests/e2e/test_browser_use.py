"""browser-use, installed at its pinned version, registers a person on the seeded form app
(examples/tasks/web/web-form-submit-1) through the rollout runner and the real recording
proxy: the verifier passes, every call is recorded with its screenshot, and nothing
leaves 127.0.0.1.

The model is a scripted upstream in this file, not the dev engine: browser-use sends
every call as a fresh system + user pair (no assistant turns, so the dev engine's
script, which picks its turn by counting assistant messages, would replay its first
turn forever), and the element indexes its actions need are Chromium's DOM node ids,
different on every run, so each reply is computed from the page text of the request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._connections import TracedHarness, off_loopback, strace_available, traced_connections
from tests.e2e._scripted_upstream import scripted_upstream

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request, referenced_images
from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
ROLLOUT_ID = "web-form-submit-1-s0"
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


class ScriptedBrowserModel:
    """browser-use's ``agent_output`` replies, computed from the page text of each request."""

    def __init__(self) -> None:
        self.steps = 0
        self.problems: list[str] = []
        self.url = ""  # the scripted upstream's, once it runs

    def reply(self, body: dict[str, Any]) -> str:
        parts = body["messages"][-1]["content"]
        page = parts if isinstance(parts, str) else "\n".join(p.get("text", "") for p in parts)
        try:
            actions = _actions(self.steps, page)
        except LookupError as exc:
            self.problems.append(f"step {self.steps}: {exc}")
            actions = [{"done": {"text": str(exc), "success": False, "files_to_display": []}}]
        self.steps += 1
        return json.dumps({"evaluation_previous_goal": "ok", "memory": "", "next_goal": "next", "action": actions})


@pytest.fixture
def scripted_model() -> Iterator[ScriptedBrowserModel]:
    model = ScriptedBrowserModel()
    with scripted_upstream(model.reply) as server:
        model.url = server.url
        yield model


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
def test_browser_use_submits_the_form_through_proxy(
    chromium_ready: None, scripted_model: ScriptedBrowserModel, tmp_path: Path
) -> None:
    adapter = get_harness("browser-use")
    if not adapter.is_installed():
        pytest.skip(f"browser-use {adapter.version} is not installed: run `openforge harness install browser-use`")
    traced = strace_available()
    trace = tmp_path / "strace.log"
    port = free_port()
    sessions = str(tmp_path / "sessions")
    argv = openforge_argv("proxy", "--upstream", scripted_model.url, "--out", sessions, "--port", str(port))

    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        outcome = run_rollout(
            _config(),
            iteration=0,
            rollout_id=ROLLOUT_ID,
            task_dir=TASK,
            proxy_url=proxy.url,
            trajectory=tmp_path / "sessions" / f"{ROLLOUT_ID}.jsonl",
            out_dir=tmp_path / "out",
            adapter=TracedHarness(adapter, trace) if traced else adapter,
        )
        proxy_log = proxy.log_tail()

    assert not scripted_model.problems, scripted_model.problems
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.final_answer == ANSWER
    sessions = tmp_path / "sessions"
    calls = read_session(sessions / f"{ROLLOUT_ID}.jsonl")
    assert len(calls) == outcome.num_calls == scripted_model.steps == 3, [c.response for c in calls]
    for call in calls:
        assert call.ok and call.session_id == ROLLOUT_ID, call.error
        assert call.prompt_token_ids and len(call.completion_logprobs) == len(call.completion_token_ids) > 0
        assert call.request["response_format"]["json_schema"]["name"] == "agent_output"
        # One screenshot per call, stored once by hash beside the session and rebuilt exactly.
        parts = call.request["messages"][-1]["content"]
        assert sum("image" in part.get("type", "") for part in parts) == 1, [p.get("type") for p in parts]
        assert len(call.images) == 1 and all((sessions / name).is_file() for name in referenced_images(call))
        rebuilt = rebuild_request(call, sessions / "images")["messages"][-1]["content"]
        assert any(str(part.get("image_url", {}).get("url", "")).startswith("data:image/png;base64,") for part in rebuilt)
    assert outcome.extra["egress_refused"] == [], outcome.extra["egress_refused"]
    if traced:
        outside = off_loopback(traced_connections(trace))
        assert not outside, "connections off loopback:\n" + "\n".join(c.line for c in outside)
