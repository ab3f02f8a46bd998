"""cua-agent, installed at its pinned version, runs its Qwen-VL loop on a fresh desktop
(examples/tasks/desktop/desktop-terminal-file) through the rollout runner and the real
recording proxy: it clicks the task's terminal, types the command, terminates; the
verifier passes, every call is recorded with its screenshot stored once by hash and
rebuilds to exactly what the harness sent, and nothing leaves 127.0.0.1. A loop that
never terminates is stopped at the step limit.

The model is a scripted upstream in this file: cua-agent's Qwen-VL loop wants
``<tool_call>`` text with coordinates on a 0..1000 grid, which the dev engine's script
does not write. The turn is the number of assistant messages in the request (cua-agent
rewrites them, but keeps one per step). Between the harness and the proxy sits a
forwarder that keeps the bodies the harness sent, so the recorded requests can be
compared with them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests._missing import require_harness
from tests.e2e._connections import TracedHarness, off_loopback, strace_available, traced_connections
from tests.e2e._scripted_model import scripted_model, serving

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request, referenced_images
from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "tasks" / "desktop" / "desktop-terminal-file"
ROLLOUT_ID = "desktop-terminal-file-s0"
ANSWER = "I created hello.txt from the terminal."


def _tool_call(**arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': 'computer', 'arguments': arguments})}\n</tool_call>"


# What a competent Qwen-VL model says at each step. The terminal spans 40..645 x 40..458
# of the 1280x800 screen (desktop.yaml); (300, 300) on the 0..1000 grid is (384, 240).
STEPS = [
    "The terminal is open; I will focus it.\n" + _tool_call(action="left_click", coordinate=[300, 300]),
    _tool_call(action="type", text="echo hello desktop > hello.txt\n"),
    f"{ANSWER}\n" + _tool_call(action="terminate", status="success"),
]


def _turn(body: dict[str, Any]) -> int:
    return sum(message.get("role") == "assistant" for message in body["messages"])


def _right_steps(body: dict[str, Any]) -> str:
    return STEPS[min(_turn(body), len(STEPS) - 1)]


def _never_done(body: dict[str, Any]) -> str:
    return f"Still looking (step {_turn(body)}).\n" + _tool_call(action="mouse_move", coordinate=[500, 500])


class _Forwarder(ThreadingHTTPServer):
    """Passes every request on to the proxy and keeps the chat bodies as the harness sent them."""

    def __init__(self, target: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.target, self.sent = target, []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _Forward(BaseHTTPRequestHandler):
    server: _Forwarder

    def _forward(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
        if self.path.endswith("/chat/completions"):
            self.server.sent.append(body)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        request = urllib.request.Request(self.server.target + self.path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as resp:
                status, raw, kind = resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            status, raw, kind = exc.code, exc.read(), exc.headers.get("Content-Type", "")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def log_message(self, *args: Any) -> None:
        pass


def _config(max_turns: int) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "cua-agent-e2e",
            "tasks": {"source": "unused"},
            "harness": {"name": "cua-agent", "max_turns": max_turns, "max_tokens": 512},
            "rollout": {"time_limit_s": 300},
        }
    )


@pytest.fixture
def cua_agent(desktop_ready: None):
    require_harness("cua-agent")
    return get_harness("cua-agent")


def _run(adapter, reply, max_turns: int, tmp_path: Path, traced: bool):
    """One rollout of the task through proxy and forwarder; (outcome, calls, bodies sent, proxy log)."""
    port = free_port()
    sessions = tmp_path / "sessions"
    with scripted_model(lambda step, body: {"content": reply(body)}) as upstream:
        argv = openforge_argv("proxy", "--upstream", upstream.url, "--out", str(sessions), "--port", str(port))
        with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
            with serving(_Forwarder(proxy.url)) as forwarder:
                outcome = run_rollout(
                    _config(max_turns),
                    iteration=0,
                    rollout_id=ROLLOUT_ID,
                    task_dir=TASK,
                    proxy_url=forwarder.url,
                    trajectory=sessions / f"{ROLLOUT_ID}.jsonl",
                    out_dir=tmp_path / "out",
                    adapter=TracedHarness(adapter, tmp_path / "strace.log") if traced else adapter,
                )
            log = proxy.log_tail()
    return outcome, read_session(sessions / f"{ROLLOUT_ID}.jsonl"), forwarder.sent, log


@pytest.mark.slow
def test_cua_agent_writes_the_file_from_the_terminal_through_proxy(cua_agent, tmp_path: Path) -> None:
    traced = strace_available()
    outcome, calls, sent, proxy_log = _run(cua_agent, _right_steps, 6, tmp_path, traced)

    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.final_answer == ANSWER  # the model's words beside its terminate action
    assert len(calls) == outcome.num_calls == len(sent) == len(STEPS), [c.response for c in calls]
    sessions = tmp_path / "sessions"
    for call, body in zip(calls, sent):
        assert call.ok and call.session_id == ROLLOUT_ID, call.error
        assert call.prompt_token_ids and len(call.completion_logprobs) == len(call.completion_token_ids) > 0
        # Each screenshot of the history is a reference to a file beside the session, and the
        # record rebuilds to exactly the request the harness sent (images and all), byte for
        # byte: its client (httpx) writes compact JSON in key order, as the proxy does.
        parts = [p for m in json.loads(body)["messages"] if isinstance(m["content"], list) for p in m["content"]]
        assert len(call.images) == sum(p["type"] == "image_url" for p in parts) >= 1
        assert all((sessions / name).is_file() for name in referenced_images(call))
        assert orjson.dumps(rebuild_request(call, sessions / "images")) == body
    # The screenshot after the click is sent again with the next call: stored once, by hash.
    assert referenced_images(calls[1]) < referenced_images(calls[2])
    stored = {f"images/{p.name}" for p in (sessions / "images").iterdir()}
    assert stored == set().union(*(referenced_images(c) for c in calls)) and len(stored) < sum(len(c.images) for c in calls)
    # History is rewritten: the model's first reply comes back as cua-agent's own words
    # and a tool call with id call_0, in pixels instead of the model's grid.
    rewritten = calls[1].request["messages"][2]
    assert rewritten["content"] == "Taking a screenshot to see the current computer screen."
    assert rewritten["tool_calls"][0]["id"] == "call_0"
    assert json.loads(rewritten["tool_calls"][0]["function"]["arguments"]) == {"type": "click", "button": "left", "x": 384, "y": 240}
    assert outcome.extra["egress_refused"] == [], outcome.extra["egress_refused"]
    if traced:
        outside = off_loopback(traced_connections(tmp_path / "strace.log"))
        assert not outside, "connections off loopback:\n" + "\n".join(c.line for c in outside)


@pytest.mark.slow
def test_cua_agent_that_never_terminates_is_stopped_at_the_step_limit(cua_agent, tmp_path: Path) -> None:
    outcome, calls, _, proxy_log = _run(cua_agent, _never_done, 2, tmp_path, traced=False)

    assert outcome.status is RolloutStatus.STEP_LIMIT, f"{outcome.details}\n--- proxy ---\n{proxy_log}"
    assert "more than harness.max_turns=2" in outcome.details and outcome.extra["step_limit"] == 2
    # Stopped soon after the first call past the limit. The scripted model answers at once,
    # so a few more calls land between the runner's check (every 0.1 s) and the kill on a
    # loaded machine (5 seen in CI); without the limit the loop would run to the time limit.
    assert len(calls) == outcome.num_calls and 3 <= outcome.num_calls <= 8, outcome.num_calls
    assert outcome.reward is None
