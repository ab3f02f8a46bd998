"""The failure taxonomy as the runner applies it: infra retries, context overflow, floods, a deleted workspace."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.components.rollout._fake_openai import Turn
from tests.components.rollout.test_runner import ANSWER_DONE, EXAMPLES, PythonHarness, _rollout

from components.core.outcome import RolloutStatus
from tests._servers import unshared_port
from components.core.trajectory import read_session
from components.rollout import runner

VLLM_OVERFLOW = (
    "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. "
    "Please reduce the length of the input messages."
)


class OneCallHarness(PythonHarness):
    """Calls the model once, without SDK retries: exits 2 when the call fails, else answers 'done'."""

    def __init__(self) -> None:
        super().__init__("")

    def command(self, run):  # type: ignore[no-untyped-def]
        self.code = f"""
import json, os, sys, urllib.request
body = json.dumps({{"model": "m", "messages": [{{"role": "user", "content": "hi"}}]}}).encode()
request = urllib.request.Request({run.base_url + "/chat/completions"!r}, body, {{"Content-Type": "application/json"}})
try:
    urllib.request.urlopen(request, timeout=10)
except OSError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
open(os.environ["ANSWER_FILE"], "w").write("done")
"""
        return super().command(run)


@pytest.fixture
def proxy(fake_openai, tmp_path: Path):
    (tmp_path / "trajectories").mkdir()
    return fake_openai([Turn(content="done")], record_dir=tmp_path / "trajectories")


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "RETRY_BACKOFF_S", 0.2)


def test_engine_failure_is_retried_and_the_later_attempt_is_judged(fake_openai, rollout_config, tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    # The reference harness's SDK tries a call 3 times (max_retries 2): all three fail.
    fake = fake_openai([Turn(content="done")], fail_status=502, fail_calls=3, record_dir=tmp_path / "trajectories")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert outcome.extra["attempts"] == 2 and fake.attempts == [0, 0, 0, 1]
    [failed] = outcome.extra["failed_attempts"]
    assert failed["attempt"] == 0 and failed["status"] == "infra_error" and "HTTP 502" in failed["details"]
    assert "attempt 0 failed on infrastructure" in outcome.details
    assert outcome.num_calls == 1 and outcome.extra["calls_all_attempts"] == 4
    calls = read_session(tmp_path / "trajectories" / "write-hello-s0.jsonl")
    assert [c.tags.get("attempt", 0) for c in calls] == [0, 0, 0, 1]  # nothing recorded is lost


def test_retries_are_bounded_and_the_last_infra_error_stays(fake_openai, rollout_config, tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    fake = fake_openai([Turn(content="x")], fail_status=503, record_dir=tmp_path / "trajectories")

    outcome = _rollout(
        rollout_config(rollout={"infra_retries": 2}), EXAMPLES / "write-hello", fake.url, tmp_path, adapter=OneCallHarness()
    )

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert outcome.extra["attempts"] == 3 and fake.attempts == [0, 1, 2]
    assert len(outcome.extra["failed_attempts"]) == 2
    assert "HTTP 503" in outcome.details


def test_retry_waits_for_the_engine_within_the_deadline(rollout_config, make_task, tmp_path: Path, monkeypatch) -> None:
    # A proxy that is up while its engine never comes back: the retry waits, then gives up at the deadline.
    harness = PythonHarness("import sys; sys.exit(2)")
    attempts = []
    monkeypatch.setattr(runner._Rollout, "_judge_failure", lambda self, a: (attempts.append(a), self.record.reclassify(RolloutStatus.INFRA_ERROR, "engine down"))[1])
    monkeypatch.setattr(runner, "wait_for_engine", _never_back)
    task = make_task("engine-gone", time_limit_s=3)

    started = time.monotonic()
    outcome = _rollout(rollout_config(), task, _always_healthy_url(tmp_path), tmp_path, adapter=harness)

    assert outcome.status is RolloutStatus.INFRA_ERROR and attempts == [0]
    assert "the engine did not come back within the rollout's time limit of 3s" in outcome.details
    assert time.monotonic() - started < 3 + 5


def _never_back(proxy_url: str, deadline: float) -> str:
    time.sleep(max(deadline - time.monotonic(), 0))
    return "upstream http://127.0.0.1:1/v1 is not reachable"


def _always_healthy_url(tmp_path: Path) -> str:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Healthy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"ok": true}')

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def test_context_refusal_is_context_overflow_not_a_harness_error(fake_openai, rollout_config, tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    fake = fake_openai([Turn(content="x")], fail_status=400, fail_message=VLLM_OVERFLOW, record_dir=tmp_path / "trajectories")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path, adapter=OneCallHarness())

    assert outcome.status is RolloutStatus.CONTEXT_OVERFLOW, outcome.details
    assert "refused call 0 for context length" in outcome.details and "maximum context length" in outcome.details
    assert outcome.extra["attempts"] == 1 and outcome.reward is None


def test_other_400_stays_a_harness_error(fake_openai, rollout_config, tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    fake = fake_openai([Turn(content="x")], fail_status=400, fail_message="tools[0] is invalid", record_dir=tmp_path / "trajectories")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path, adapter=OneCallHarness())

    assert outcome.status is RolloutStatus.HARNESS_ERROR and outcome.extra["attempts"] == 1


def test_flooding_harness_is_killed_at_the_output_cap(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    flood = PythonHarness("""
        import sys
        chunk = "y" * 65536 + "\\n"
        while True:
            sys.stdout.write(chunk)
    """)
    started = time.monotonic()

    outcome = _rollout(rollout_config(rollout={"max_output_mb": 1}), make_task("flood"), proxy.url, tmp_path, adapter=flood)

    assert outcome.status is RolloutStatus.HARNESS_ERROR
    assert "more than 1 MB to its stdout (rollout.max_output_mb)" in outcome.details
    assert time.monotonic() - started < 20  # killed at the cap, not at the 30 s time limit


def test_deleted_workspace_is_graded_in_an_empty_one(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    vandal = PythonHarness("""
        import os, shutil
        shutil.rmtree(os.getcwd())
        open(os.environ["ANSWER_FILE"], "w").write("done")
    """)
    verify = "import os, sys; sys.exit(0 if os.listdir('.') == [] else 1)"
    task = make_task("vandal", verify=verify, workspace="files")
    (task / "files").mkdir()
    (task / "files" / "keep.txt").write_text("x")

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=vandal)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert outcome.passed is True and "deleted its workspace" in outcome.details


def test_proxy_down_is_retried_then_infra_error(rollout_config, make_task, tmp_path: Path) -> None:
    outcome = _rollout(
        rollout_config(rollout={"infra_retries": 1}), make_task("offline", time_limit_s=4),
        f"http://127.0.0.1:{unshared_port()}", tmp_path, adapter=ANSWER_DONE, proxy_wait_s=0.3,
    )  # fmt: skip

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert "recording proxy not reachable" in outcome.details and "not retried" in outcome.details
    assert outcome.duration_s < 4 + 5
