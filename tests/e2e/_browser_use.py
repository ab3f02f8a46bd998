"""browser-use through the rollout runner and the real recording proxy, with a scripted model.

The model is a scripted upstream, not the dev engine: browser-use sends every call as a
fresh system + user pair (no assistant turns, so the dev engine's script, which picks its
turn by counting assistant messages, would replay its first turn forever), and the element
indexes its actions need are Chromium's DOM node ids, different on every run, so each
reply is computed by a test's ``Script`` from the page text of the request.

What every browser-use rollout test checks afterwards is here too: each call recorded with
its one screenshot stored once by hash, and no connection off 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._connections import TracedHarness, off_loopback, strace_available, traced_connections

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request, referenced_images
from components.core.outcome import Outcome, RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import RecordedCall, read_session
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
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


class ScriptedBrowserModel(ThreadingHTTPServer):
    """An OpenAI-compatible upstream answering browser-use's ``agent_output`` replies from ``script``."""

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.steps = 0
        self.problems: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def reply(self, body: dict[str, Any]) -> str:
        parts = body["messages"][-1]["content"]
        page = parts if isinstance(parts, str) else "\n".join(p.get("text", "") for p in parts)
        try:
            actions = self.script(self.steps, page)
        except LookupError as exc:
            self.problems.append(f"step {self.steps}: {exc}")
            actions = [{"done": {"text": str(exc), "success": False, "files_to_display": []}}]
        self.steps += 1
        return json.dumps({"evaluation_previous_goal": "ok", "memory": "", "next_goal": "next", "action": actions})


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedBrowserModel

    def do_GET(self) -> None:
        self._json({"object": "list", "data": [{"id": "scripted-browser-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        content = self.server.reply(body)
        # Token ids and logprobs as vLLM returns them (the proxy records nothing else as a
        # trainable call), from a byte-level "tokenizer".
        tokens = list(content.encode())
        prompt = list(json.dumps(body["messages"]).encode()[:4096])
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "token_ids": tokens,
            "logprobs": {"content": [{"token": chr(t), "logprob": 0.0} for t in tokens]},
        }
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(tokens), "total_tokens": len(prompt + tokens)}
        self._json({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [choice], "usage": usage, "prompt_token_ids": prompt})  # fmt: skip

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def scripted_browser_model(script: Script) -> Iterator[ScriptedBrowserModel]:
    server = ScriptedBrowserModel(script)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class BrowserUseRollout:
    outcome: Outcome
    calls: list[RecordedCall]
    sessions: Path
    proxy_log: str
    trace: Path | None  # strace's log of the harness's connections; None without strace


def run_browser_use(
    model: ScriptedBrowserModel, task_dir: Path, rollout_id: str, tmp_path: Path, *, max_turns: int
) -> BrowserUseRollout:
    """One rollout of ``task_dir`` by browser-use through a real proxy (skips if browser-use is not installed)."""
    adapter = get_harness("browser-use")
    if not adapter.is_installed():
        pytest.skip(f"browser-use {adapter.version} is not installed: run `openforge harness install browser-use`")
    trace = tmp_path / "strace.log" if strace_available() else None
    config = ExperimentConfig.model_validate(
        {
            "name": "browser-use-e2e",
            "tasks": {"source": "unused"},
            # max_tokens leaves room for a five-action reply.
            "harness": {"name": "browser-use", "max_turns": max_turns, "max_tokens": 1024},
            "rollout": {"time_limit_s": 240},
        }
    )
    port = free_port()
    sessions = tmp_path / "sessions"
    argv = openforge_argv("proxy", "--upstream", model.url, "--out", str(sessions), "--port", str(port))
    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        outcome = run_rollout(
            config,
            iteration=0,
            rollout_id=rollout_id,
            task_dir=task_dir,
            proxy_url=proxy.url,
            trajectory=sessions / f"{rollout_id}.jsonl",
            out_dir=tmp_path / "out",
            adapter=TracedHarness(adapter, trace) if trace else adapter,
        )
        proxy_log = proxy.log_tail()
    calls = read_session(sessions / f"{rollout_id}.jsonl") if (sessions / f"{rollout_id}.jsonl").exists() else []
    return BrowserUseRollout(outcome, calls, sessions, proxy_log, trace)


def assert_passed(run: BrowserUseRollout, model: ScriptedBrowserModel, calls: int) -> None:
    """The script ran as written, the verifier passed, and each of its ``calls`` steps was recorded."""
    assert not model.problems, model.problems
    outcome = run.outcome
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{run.proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert len(run.calls) == outcome.num_calls == model.steps == calls, [c.response for c in run.calls]


def assert_recorded_with_screenshots(run: BrowserUseRollout, rollout_id: str) -> None:
    """Every call recorded, trainable, with its one screenshot stored once by hash and rebuilt exactly."""
    for call in run.calls:
        assert call.ok and call.session_id == rollout_id, call.error
        assert call.prompt_token_ids and len(call.completion_logprobs) == len(call.completion_token_ids) > 0
        assert call.request["response_format"]["json_schema"]["name"] == "agent_output"
        parts = call.request["messages"][-1]["content"]
        assert sum("image" in part.get("type", "") for part in parts) == 1, [p.get("type") for p in parts]
        assert len(call.images) == 1 and all((run.sessions / name).is_file() for name in referenced_images(call))
        rebuilt = rebuild_request(call, run.sessions / "images")["messages"][-1]["content"]
        urls = [str(part.get("image_url", {}).get("url", "")) for part in rebuilt]
        assert any(url.startswith("data:image/png;base64,") for url in urls)


def assert_stayed_on_loopback(run: BrowserUseRollout) -> None:
    """Nothing reached the egress sink, and (with strace) no connection left 127.0.0.1."""
    assert run.outcome.extra["egress_refused"] == [], run.outcome.extra["egress_refused"]
    if run.trace is not None:
        outside = off_loopback(traced_connections(run.trace))
        assert not outside, "connections off loopback:\n" + "\n".join(c.line for c in outside)
