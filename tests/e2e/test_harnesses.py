"""Each real harness, installed at its pinned version, runs a rollout through the real
recording proxy and the scripted dev engine: the agent must make a tool call that
writes a file, the verifier checks the file, the session file holds every call in order
with token ids, and strace shows that no connection left 127.0.0.1.

A harness that is not installed is skipped, saying how to install it (`make harnesses`
installs them all; `make test` does so first).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests._missing import missing, require_harness
from tests.e2e._branches import assert_rewrites_become_branches
from tests.e2e._connections import TracedHarness, off_loopback, strace_available, traced_connections

from components.core.config import ExperimentConfig
from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import RecordedCall, read_session
from components.rollout.harnesses import get_harness
from components.rollout.runner import run_rollout

REPO = Path(__file__).resolve().parents[2]
ROLLOUT_ID = "write-greeting-s0"
GREETING = "hello from the harness"
ANSWER = "greeting.txt is written"
VERIFY = f"""
import pathlib, sys
text = pathlib.Path("greeting.txt").read_text() if pathlib.Path("greeting.txt").exists() else None
print(repr(text))
sys.exit(0 if text is not None and text.strip() == {GREETING!r} else 1)
"""


@dataclass(frozen=True)
class Case:
    """What the scripted policy does in one harness: a tool call that writes the file, then an end."""

    write: dict[str, Any]  # the scripted tool call (shell or write_file, resolved per request)
    finish: dict[str, Any]  # the turn that ends the run the way this harness ends one
    egress: list[str]  # what the pinned release tries to reach outside (refused by the sink)


WRITE_FILE = {"write_file": {"path": "greeting.txt", "content": GREETING}}
SHELL_WRITE = {"shell": f"printf '%s' '{GREETING}' > greeting.txt"}
CASES = {
    # Claude Code's Write tool wants an absolute path, which the script cannot know.
    "claude-code": Case(write=SHELL_WRITE, finish={"content": ANSWER}, egress=[]),
    "codex": Case(write=SHELL_WRITE, finish={"content": ANSWER}, egress=[]),
    "mini-swe-agent": Case(
        write=SHELL_WRITE,
        # mini ends on this command; what it prints after the marker is its submission.
        finish={"tool_calls": [{"shell": f"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo {ANSWER}"}]},
        egress=[],
    ),
    "openclaw": Case(write=WRITE_FILE, finish={"content": ANSWER}, egress=[]),
}


def _script(case: Case) -> dict[str, Any]:
    return {"turns": [{"content": "", "tool_calls": [case.write]}, case.finish]}


def _task(root: Path) -> Path:
    task = root / "write-greeting"
    task.mkdir(parents=True)
    (task / "task.yaml").write_text(
        "id: write-greeting\n"
        f'prompt: "Create greeting.txt in the current directory containing exactly: {GREETING}"\n'
        'verifier: {command: ["python3", "{task_dir}/verify.py"], timeout_s: 10}\n'
    )
    (task / "verify.py").write_text(VERIFY)
    return task


def _config(harness: str) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "harness-e2e",
            "tasks": {"source": "unused"},
            # Room for the whole scripted tool call; turns to spare beyond the script's two.
            "harness": {"name": harness, "max_turns": 4, "max_tokens": 256},
            "rollout": {"time_limit_s": 240},
        }
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_harness_rollout_writes_the_file_through_proxy_and_scripted_engine(
    name: str, make_dev_engine, tmp_path: Path
) -> None:
    require_harness(name)
    adapter = get_harness(name)
    if not strace_available():
        missing("strace is missing: it proves the harness made no connection off loopback (apt-get install strace)")
    case = CASES[name]
    engine = make_dev_engine(_script(case))
    port = free_port()
    argv = openforge_argv("proxy", "--upstream", engine.url, "--out", str(tmp_path / "sessions"), "--port", str(port), "--training")
    trace = tmp_path / "strace.log"

    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        outcome = run_rollout(
            _config(name),
            iteration=0,
            rollout_id=ROLLOUT_ID,
            task_dir=_task(tmp_path / "tasks"),
            proxy_url=proxy.url,
            trajectory=tmp_path / "sessions" / f"{ROLLOUT_ID}.jsonl",
            out_dir=tmp_path / "out",
            adapter=TracedHarness(adapter, trace),
        )
        proxy_log = proxy.log_tail()

    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.final_answer is not None and ANSWER in outcome.final_answer
    calls = read_session(tmp_path / "sessions" / f"{ROLLOUT_ID}.jsonl")  # checks call_index order
    _assert_every_call_recorded_with_tokens(calls)
    if name == "openclaw":  # its rewritten history (tests/e2e/test_harness_branches.py's subject)
        assert_rewrites_become_branches(ROLLOUT_ID, calls)
    assert outcome.num_calls == len(calls)
    assert outcome.extra["egress_refused"] == case.egress, outcome.extra["egress_refused"]
    connections = traced_connections(trace)
    assert any(c.port == port for c in connections), "strace saw no call to the proxy: the trace is broken"
    outside = off_loopback(connections)
    assert not outside, "connections off loopback:\n" + "\n".join(c.line for c in outside)


def _assert_every_call_recorded_with_tokens(calls: list[RecordedCall]) -> None:
    """The script's two turns, in order: a tool call, then the end; each with its tokens."""
    assert len(calls) == 2, [c.response for c in calls]
    assert all(c.ok and c.session_id == ROLLOUT_ID and c.prompt_token_ids for c in calls)
    assert all(len(c.completion_logprobs) == len(c.completion_token_ids) for c in calls)
    # The second call's prompt carries the first call's answer and its tool result: the
    # harness ran the tool between them, and the two calls are one conversation.
    assert len(calls[1].prompt_token_ids) > len(calls[0].prompt_token_ids) + len(calls[0].completion_token_ids)
