"""kill -9 the engine while a rollout runs: the runner retries once it is back, or gives up in time.

Real processes throughout: the dev engine (scripted tiny model), the recording proxy
and the reference harness. The script's first turn runs ``sleep`` in the shell, so the
harness is busy in its tool when the engine dies; its next model call then fails
upstream (status 0), its SDK retries give out, and it exits 2. The runner must call that
an infrastructure failure, wait for the engine through the proxy's /health?upstream=1,
and run the task again as attempt 1 on /s/<id>/a/1/, all within the rollout's deadline.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from tests._servers import REPO, TINY_MODEL_NAME, dev_engine_argv, unshared_port

from components.core.config import ExperimentConfig
from components.core.outcome import RolloutStatus
from components.core.services import Service, free_port, openforge_argv, start_service
from components.core.trajectory import attempt_of, read_session
from components.rollout import runner
from components.rollout.runner import run_rollout

TASK = REPO / "examples" / "tasks" / "quickstart" / "write-hello"
SCRIPT = {
    "turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "sleep 2; printf hello > hello.txt"}}]},
        {"content": "hello.txt is written"},
    ]
}


class Engine:
    """A dev engine on a fixed port that the test can kill -9 and start again on that port."""

    def __init__(self, model_dir: Path, tmp_path: Path) -> None:
        self.port = unshared_port()
        self.script = tmp_path / "script.json"
        self.script.write_text(json.dumps(SCRIPT))
        self.model_dir, self.logs = model_dir, tmp_path / "logs"
        self.service: Service | None = None
        self.starts = 0

    def start(self) -> None:
        argv = dev_engine_argv(self.model_dir, self.port, script=self.script, served_model_name=TINY_MODEL_NAME)
        self.starts += 1
        self.service = start_service(
            f"engine-{self.starts}", argv, port=self.port, log_dir=self.logs, env={"PYTHONPATH": str(REPO)}
        )

    def kill_9(self) -> None:
        assert self.service is not None
        self.service.process.kill()  # SIGKILL: no shutdown, sockets just vanish
        self.service.process.wait()

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "RETRY_BACKOFF_S", 0.5)


@pytest.fixture(scope="module")
def stack(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One engine and proxy for both tests (starting them is most of the time): the first
    test leaves the engine restarted, the second kills it for good."""
    tmp_path = tmp_path_factory.mktemp("engine-restart")
    engine = Engine(tiny_model_dir, tmp_path)
    engine.start()
    port = free_port()
    argv = openforge_argv(
        "proxy", "--upstream", f"http://127.0.0.1:{engine.port}", "--out", str(tmp_path / "shared"),
        "--port", str(port), "--training",
    )  # fmt: skip
    try:
        with start_service("proxy", argv, port=port, log_dir=tmp_path / "logs", env={"PYTHONPATH": str(REPO)}) as proxy:
            yield engine, proxy, tmp_path / "shared"
    finally:
        engine.stop()


def _config(time_limit_s: float) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "engine-restart",
            "tasks": {"source": "unused"},
            "harness": {"max_turns": 4, "max_tokens": 256},  # room for the whole scripted tool call
            "rollout": {"time_limit_s": time_limit_s, "infra_retries": 2},
        }
    )


def _kill_after_first_call(engine: Engine, trajectory: Path, then=None) -> threading.Thread:
    """In the background: once the first call is recorded (the harness is now in its tool), kill -9 the engine."""

    def act() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if trajectory.exists() and trajectory.read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        engine.kill_9()
        if then is not None:
            then()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


def _restart_when_the_attempt_failed(engine: Engine, trajectory: Path):
    def restart() -> None:
        # Wait until the harness's SDK has given up (3 failed tries), so attempt 0 really fails.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum(call.upstream_status == 0 for call in read_session(trajectory)) >= 3:
                break
            time.sleep(0.1)
        engine.start()

    return restart


def _task_with_limit(tmp_path: Path, limit: float) -> Path:
    """A copy of the task whose own time limit (which wins over the config's) is ``limit``."""
    import shutil

    import yaml

    task = tmp_path / "write-hello"
    shutil.copytree(TASK, task)
    spec = yaml.safe_load((task / "task.yaml").read_text())
    (task / "task.yaml").write_text(yaml.safe_dump({**spec, "time_limit_s": limit}))
    return task


@pytest.mark.slow
def test_engine_killed_mid_rollout_is_retried_on_a_fresh_attempt(stack, tiny_model_dir: Path, tmp_path: Path) -> None:
    engine, proxy, shared = stack
    trajectory = shared / "write-hello-s0.jsonl"
    # Recovery, not speed, is the point: room for a restart on a loaded machine (the task says 60 s).
    task = _task_with_limit(tmp_path, 180)
    killer = _kill_after_first_call(engine, trajectory, then=_restart_when_the_attempt_failed(engine, trajectory))

    outcome = run_rollout(
        _config(180), iteration=0, rollout_id="write-hello-s0", task_dir=task, proxy_url=proxy.url,
        trajectory=trajectory, out_dir=tmp_path / "out",
    )  # fmt: skip
    killer.join(5)

    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n{proxy.log_tail()}"
    assert (outcome.passed, outcome.reward) == (True, 1.0) and engine.starts == 2
    assert outcome.extra["attempts"] == 2
    [failed] = outcome.extra["failed_attempts"]
    assert failed["attempt"] == 0 and failed["status"] == "infra_error" and "HTTP 0" in failed["details"]
    calls = read_session(trajectory)
    first, second = [c for c in calls if attempt_of(c) == 0], [c for c in calls if attempt_of(c) == 1]
    assert first[0].ok and all(c.upstream_status == 0 for c in first[1:])  # kept, not trained on
    assert [c.ok for c in second] == [True, True] and outcome.num_calls == 2
    assert all("retry_of" not in c.tags for c in second)  # attempt 1 is not a retry of attempt 0
    _assert_tokens_match_text(second, tiny_model_dir)


def _assert_tokens_match_text(calls, model_dir: Path) -> None:
    # The token/text check of the train step must raise no false alarm on a real engine's calls.
    from transformers import AutoTokenizer

    from components.trainer.capture_check import check_rollout

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    checked, skipped, problem = check_rollout(calls, lambda ids, skip: tokenizer.decode(ids, skip_special_tokens=skip))
    assert problem is None and checked == 1 and skipped == 1


@pytest.mark.slow
def test_engine_that_never_returns_is_an_infra_error_inside_the_deadline(stack, tmp_path: Path) -> None:
    engine, proxy, shared = stack
    trajectory = shared / "write-hello-s1.jsonl"
    limit = 20  # past the harness SDK's own retries even on a loaded machine, so the wait is the runner's
    task = _task_with_limit(tmp_path, limit)
    _kill_after_first_call(engine, trajectory)

    started = time.monotonic()
    outcome = run_rollout(
        _config(limit), iteration=0, rollout_id="write-hello-s1", task_dir=task, proxy_url=proxy.url,
        trajectory=trajectory, out_dir=tmp_path / "out",
    )  # fmt: skip
    elapsed = time.monotonic() - started

    assert outcome.status is RolloutStatus.INFRA_ERROR, outcome.details
    assert "failed upstream (last: HTTP 0" in outcome.details
    assert f"the engine did not come back within the rollout's time limit of {limit}s" in outcome.details
    assert f"127.0.0.1:{engine.port}" in outcome.details  # the message names the engine it waited for
    assert outcome.extra["attempts"] == 1 and elapsed < limit + 5
