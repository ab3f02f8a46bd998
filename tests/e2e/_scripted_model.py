"""What the browser-harness end-to-end tests share: a scripted upstream and one proxied web rollout.

The scripted upstream stands where the engine stands, behind the real recording proxy, so
it receives chat completions whatever API the harness speaks (the proxy translates). Each
test gives it a ``reply(step, body) -> message`` (``{"content": ..., "tool_calls": [...]}``)
that computes what a competent agent does at that step. Replies carry token ids and
logprobs as vLLM returns them, from a byte-level "tokenizer", so every call is trainable.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import orjson
from tests.e2e._connections import TracedHarness, off_loopback, strace_available, traced_connections

from components.core.config import ExperimentConfig
from components.core.images import rebuild_request, referenced_images
from components.core.outcome import Outcome
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import RecordedCall, read_session
from components.rollout.harnesses import HarnessAdapter
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
Reply = Callable[[int, dict[str, Any]], dict[str, Any]]


class ScriptedModel(ThreadingHTTPServer):
    """An OpenAI-compatible chat-completions upstream answering from ``reply``."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply_for = reply
        self.steps = 0
        self.bodies: list[dict[str, Any]] = []
        self.problems: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        try:
            message = self.reply_for(self.steps, body)
        except LookupError as exc:  # the page or request was not what the script expected
            self.problems.append(f"step {self.steps}: {exc}")
            message = {"content": f"script failed: {exc}"}
        self.steps += 1
        return message


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedModel

    def do_GET(self) -> None:
        self._json({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = self.server.answer(body)
        calls = [{"id": f"call_{self.server.steps}_{i}", "type": "function",
                  "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
                 for i, call in enumerate(message.get("tool_calls") or ())]  # fmt: skip
        content = message.get("content")
        tokens = list((content or json.dumps([c["function"] for c in calls])).encode())
        prompt = list(json.dumps(body["messages"]).encode()[:4096])
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})},
            "finish_reason": "tool_calls" if calls else "stop",
            "token_ids": tokens,
            "logprobs": {"content": [{"token": chr(t), "logprob": 0.0} for t in tokens]},
        }
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(tokens), "total_tokens": len(prompt + tokens)}
        self._json({"id": f"chatcmpl-{self.server.steps}", "object": "chat.completion", "created": 0,
                    "model": body["model"], "choices": [choice], "usage": usage, "prompt_token_ids": prompt})  # fmt: skip

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


_Server = TypeVar("_Server", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """``server`` answering on a thread of its own until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def scripted_model(reply: Reply) -> AbstractContextManager[ScriptedModel]:
    return serving(ScriptedModel(reply))


@dataclass
class WebRollout:
    outcome: Outcome
    calls: list[RecordedCall]
    sessions: Path
    proxy_log: str
    outside: list[str] | None  # connections off loopback (None: strace missing, not checked)


def run_web_rollout(
    config: ExperimentConfig, adapter: HarnessAdapter, model: ScriptedModel, task: Path, tmp_path: Path
) -> WebRollout:
    """One rollout of ``task`` through the real proxy in front of ``model``, the harness under strace when there is one."""
    rollout_id = f"{task.name}-s0"
    traced = strace_available()
    trace = tmp_path / "strace.log"
    port = free_port()
    sessions = tmp_path / "sessions"
    argv = openforge_argv("proxy", "--upstream", model.url, "--out", str(sessions), "--port", str(port))
    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        outcome = run_rollout(
            config,
            iteration=0,
            rollout_id=rollout_id,
            task_dir=task,
            proxy_url=proxy.url,
            trajectory=sessions / f"{rollout_id}.jsonl",
            out_dir=tmp_path / "out",
            adapter=TracedHarness(adapter, trace) if traced else adapter,
        )
        proxy_log = proxy.log_tail()
    path = sessions / f"{rollout_id}.jsonl"
    calls = read_session(path) if path.exists() else []
    outside = [c.line for c in off_loopback(traced_connections(trace))] if traced else None
    return WebRollout(outcome, calls, sessions, proxy_log, outside)


def check_recorded_calls(rollout: WebRollout) -> None:
    """Every call is trainable, its images are stored by hash beside the session, and it rebuilds to what was sent."""
    for call in rollout.calls:
        assert call.ok and call.session_id == rollout.outcome.rollout_id, call.error
        assert call.prompt_token_ids and len(call.completion_logprobs) == len(call.completion_token_ids) > 0
        assert all((rollout.sessions / name).is_file() for name in referenced_images(call))
        # The digest was taken of the body as it arrived, screenshots inline: the rebuilt
        # request is the very JSON the harness sent.
        rebuilt = rebuild_request(call, rollout.sessions / "images")
        assert hashlib.sha256(orjson.dumps(rebuilt, option=orjson.OPT_SORT_KEYS)).hexdigest() == call.request_digest
