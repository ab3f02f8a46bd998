"""One rollout end to end: reference harness -> real recording proxy -> scripted dev engine."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

from components.core.outcome import RolloutStatus
from components.core.services import free_port, openforge_argv, start_service
from components.core.trajectory import read_session
from components.rollout.runner import run_rollout

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "quickstart"
REPO = Path(__file__).resolve().parents[3]


@contextmanager
def _recording_proxy(engine, tmp_path: Path):
    port = free_port()
    argv = openforge_argv(
        "proxy", "--upstream", engine.url, "--out", str(tmp_path / "shared"), "--port", str(port), "--training"
    )
    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
        yield proxy


def _write_hello(rollout_config, proxy, tmp_path: Path):
    """One write-hello rollout of the reference harness through ``proxy``: (outcome, trajectory file)."""
    trajectory = tmp_path / "shared" / "write-hello-s0.jsonl"
    outcome = run_rollout(
        rollout_config(harness={"max_tokens": 256}),  # room for the whole scripted tool call
        iteration=0,
        rollout_id="write-hello-s0",
        task_dir=EXAMPLES / "write-hello",
        proxy_url=proxy.url,
        trajectory=trajectory,
        out_dir=tmp_path / "out",
    )
    return outcome, trajectory


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
    with _recording_proxy(engine, tmp_path) as proxy:
        yield proxy


@pytest.mark.slow
def test_reference_harness_rollout_through_the_recording_proxy(
    recording_proxy, rollout_config, tmp_path: Path
) -> None:
    outcome, trajectory = _write_hello(rollout_config, recording_proxy, tmp_path)

    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n{recording_proxy.log_tail()}"
    assert (outcome.passed, outcome.reward) == (True, 1.0)
    assert outcome.final_answer == "hello.txt is written"
    calls = read_session(trajectory)
    assert outcome.num_calls == len(calls) == 2
    assert all(call.ok and call.session_id == "write-hello-s0" for call in calls)
    # The second call carries the tool's output: the harness ran the command in its workspace.
    tool_message = calls[1].request["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("[exit code 0]")


# What a policy sampling freely writes when it gets the syntax wrong: the call's JSON is cut short.
MALFORMED_CALL = '<tool_call>\n{"name": "shell", "arguments": {"command": "printf hello > hello.txt"\n</tool_call>'


@pytest.mark.slow
def test_a_malformed_tool_call_is_the_policys_failure_a_graded_usable_rollout(
    make_dev_engine, rollout_config, tmp_path: Path
) -> None:
    """The engine's own parser reads what the policy wrote; a call it cannot parse reaches the
    harness as text, and the rollout fails the task: signal to learn from, not an
    infrastructure error that rollout.infra_retries would run again."""
    from components.reward import inspect_capture, score_outcomes

    with _recording_proxy(make_dev_engine({"turns": [{"content": MALFORMED_CALL}]}), tmp_path) as proxy:
        outcome, trajectory = _write_hello(rollout_config, proxy, tmp_path)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (False, 0.0)
    [call] = read_session(trajectory)
    message = call.response["choices"][0]["message"]
    assert call.ok and not message.get("tool_calls") and "printf hello" in message["content"]
    [record], unusable = score_outcomes([outcome], {outcome.rollout_id: inspect_capture([call])}, iteration=0)
    assert record.usable and record.reward == 0.0 and unusable == {}


SECRET = "a-test-secret-of-at-least-16-bytes"


@pytest.fixture
def token_proxy(make_dev_engine, tmp_path: Path):
    """A proxy that requires per-session tokens (the secret through its environment)."""
    engine = make_dev_engine({"turns": [{"content": "done"}]})
    port = free_port()
    argv = openforge_argv("proxy", "--upstream", engine.url, "--out", str(tmp_path / "shared"), "--port", str(port))
    env = {"PYTHONPATH": str(REPO), "OPENFORGE_PROXY_SECRET": SECRET}
    with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env=env) as proxy:
        yield proxy


@pytest.mark.parametrize("runner_has_secret", [True, False])
def test_runner_gives_the_harness_its_session_token_when_the_proxy_requires_one(
    token_proxy, rollout_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner_has_secret: bool
) -> None:
    if runner_has_secret:
        monkeypatch.setenv("OPENFORGE_PROXY_SECRET", SECRET)
    else:
        monkeypatch.delenv("OPENFORGE_PROXY_SECRET", raising=False)
    trajectory = tmp_path / "shared" / "say-yes-s0.jsonl"

    outcome = run_rollout(
        rollout_config(rollout={"infra_retries": 0}),
        iteration=0,
        rollout_id="say-yes-s0",
        task_dir=EXAMPLES / "say-yes",
        proxy_url=token_proxy.url,
        trajectory=trajectory,
        out_dir=tmp_path / "out",
    )

    if runner_has_secret:
        assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n{token_proxy.log_tail()}"
        assert outcome.num_calls == 1 and outcome.extra["proxy_calls"] == 1  # the flush carried the token too
    else:  # a set-up mistake, caught before the harness runs: not a failure to train on
        assert outcome.status is RolloutStatus.INFRA_ERROR
        assert "requires per-session tokens" in outcome.details and "OPENFORGE_PROXY_SECRET" in outcome.details
        assert not trajectory.exists()
