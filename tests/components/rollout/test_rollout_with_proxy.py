"""One rollout end to end: reference harness -> real recording proxy -> scripted dev engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.rollout.runner import run_rollout

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "quickstart"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def recording_proxy(make_dev_engine, tmp_path: Path):
    engine = make_dev_engine(
        {
            "turns": [
                {"tool_calls": [{"name": "shell", "arguments": {"command": "printf hello > hello.txt"}}]},
                {"content": "hello.txt is written"},
            ]
        }
    )
    port = free_port()
    argv = openforge_argv(
        "proxy", "--upstream", engine.url, "--out", str(tmp_path / "shared"), "--port", str(port), "--training"
    )
    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        yield proxy


@pytest.mark.slow
def test_reference_harness_rollout_through_the_recording_proxy(
    recording_proxy, rollout_config, tmp_path: Path
) -> None:
    trajectory = tmp_path / "shared" / "write-hello-s0.jsonl"

    outcome = run_rollout(
        rollout_config(harness={"max_tokens": 256}),  # room for the whole scripted tool call
        iteration=0,
        rollout_id="write-hello-s0",
        task_dir=EXAMPLES / "write-hello",
        proxy_url=recording_proxy.url,
        trajectory=trajectory,
        out_dir=tmp_path / "out",
    )

    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n{recording_proxy.log_tail()}"
    assert (outcome.passed, outcome.reward) == (True, 1.0)
    assert outcome.final_answer == "hello.txt is written"
    calls = read_session(trajectory)
    assert outcome.num_calls == len(calls) == 2
    assert all(call.ok and call.session_id == "write-hello-s0" for call in calls)
    # The second call carries the tool's output: the harness ran the command in its workspace.
    tool_message = calls[1].request["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("[exit code 0]")
