"""The rollout runner against a fake OpenAI server standing in for the recording proxy."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from tests.components.rollout._fake_openai import Turn, shell_call

from components.core.config import CONFIG_ENV
from components.core.outcome import Outcome, RolloutStatus
from components.core.rollout_identity import OUTCOME_FILE
from tests._servers import unshared_port
from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun
from components.rollout.runner import run_rollout

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "quickstart"


class PythonHarness(HarnessAdapter):
    """A stand-in harness: a Python snippet run in the workspace; it may write $ANSWER_FILE."""

    name = "python-snippet"

    def __init__(self, code: str) -> None:
        self.code = textwrap.dedent(code)

    def command(self, run: HarnessRun) -> HarnessCommand:
        return HarnessCommand([sys.executable, "-c", self.code], {"ANSWER_FILE": str(run.scratch_dir / "answer")})

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        path = run.scratch_dir / "answer"
        return path.read_text() if path.exists() else None


# Answers "done" without calling the model: quicker than the reference harness where
# the harness is not what a test is about.
ANSWER_DONE = PythonHarness("import os; open(os.environ['ANSWER_FILE'], 'w').write('done')")


def _rollout(config, task_dir: Path, proxy_url: str, tmp_path: Path, *, rollout_id: str | None = None, **kw) -> Outcome:
    rollout_id = rollout_id or f"{task_dir.name}-s0"
    return run_rollout(
        config,
        iteration=0,
        rollout_id=rollout_id,
        task_dir=task_dir,
        proxy_url=proxy_url,
        trajectory=tmp_path / "trajectories" / f"{rollout_id}.jsonl",
        out_dir=tmp_path / "out",
        **kw,
    )


def test_passing_rollout_is_ok_with_reward_1(fake_openai, rollout_config, tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    turns = [shell_call("printf hello > hello.txt"), Turn(content="done")]
    fake = fake_openai(turns, record_dir=tmp_path / "trajectories")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (True, 1.0)
    assert outcome.final_answer == "done" and outcome.harness_exit_code == 0
    assert outcome.num_calls == 2 and outcome.extra["proxy_calls"] == 2
    assert fake.sessions == ["write-hello-s0", "write-hello-s0"]
    assert fake.flushes == ["write-hello-s0"]
    assert Outcome.model_validate_json((tmp_path / "out" / OUTCOME_FILE).read_text()) == outcome


def test_failing_rollout_is_ok_with_reward_0(proxy, rollout_config, tmp_path: Path) -> None:
    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", proxy.url, tmp_path)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (False, 0.0)
    assert "hello.txt was not created" in outcome.verifier_output


def test_verifier_json_sets_a_dense_reward(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    verify = 'import json, sys; print("scoring"); print(json.dumps({"reward": 0.25})); sys.exit(1)'
    task = make_task("dense", verify=verify)

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=ANSWER_DONE)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (False, 0.25)


def test_verifier_sees_answer_task_dir_and_workspace(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    verify = """
        import os, sys
        from pathlib import Path
        answer = Path(os.environ["OPENFORGE_FINAL_ANSWER"]).read_text()
        in_task_dir = Path(os.environ["OPENFORGE_TASK_DIR"], "verify.py").is_file()
        sys.exit(0 if answer == "done" and in_task_dir and Path("input.txt").read_text() == "data" else 1)
    """
    task = make_task("env-check", verify=textwrap.dedent(verify), workspace="files")
    (task / "files").mkdir()
    (task / "files" / "input.txt").write_text("data")

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=ANSWER_DONE)

    assert (outcome.status, outcome.passed) == (RolloutStatus.OK, True), outcome.verifier_output


def test_hanging_harness_times_out_and_leaves_no_process(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    import psutil

    # A unique sleep, found by its command line: pids written from inside a confined
    # harness are those of its own PID namespace, not the host's.
    marker = f"{120 + os.getpid() % 1000 / 1000:.3f}"
    hang = PythonHarness(f"""
        import os, subprocess, time
        subprocess.Popen(["sleep", {marker!r}], process_group=0)  # escapes the harness's group
        subprocess.Popen(["setsid", "sleep", {marker!r}])  # and its session
        time.sleep(120)
    """)
    task = make_task("hang", time_limit_s=2)

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=hang)

    assert outcome.status is RolloutStatus.TIMEOUT
    assert "time limit of 2s" in outcome.details
    assert outcome.reward is None and outcome.harness_exit_code is None
    assert outcome.duration_s < 2 + 10  # generous margin: shared CI machines stall
    left = [p for p in psutil.process_iter(["cmdline", "status"]) if p.info["cmdline"] == ["sleep", marker]]
    assert [p for p in left if p.info["status"] != psutil.STATUS_ZOMBIE] == [], "processes outlived the rollout"


def test_harness_exiting_non_zero_is_harness_error(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    crash = PythonHarness("import sys; print('model said no', file=sys.stderr); sys.exit(3)")

    outcome = _rollout(rollout_config(), make_task("crash"), proxy.url, tmp_path, adapter=crash)

    assert outcome.status is RolloutStatus.HARNESS_ERROR
    assert outcome.harness_exit_code == 3
    assert "exited with code 3" in outcome.details and "model said no" in outcome.details
    assert outcome.reward is None and outcome.passed is None


@pytest.mark.parametrize(
    ("status", "expected"), [(502, RolloutStatus.INFRA_ERROR), (400, RolloutStatus.HARNESS_ERROR)]
)
def test_harness_giving_up_on_a_failing_engine_is_infra_error(
    fake_openai, rollout_config, tmp_path: Path, status: int, expected: RolloutStatus
) -> None:
    (tmp_path / "trajectories").mkdir()
    fake = fake_openai([Turn(content="never")], fail_status=status, record_dir=tmp_path / "trajectories")

    outcome = _rollout(rollout_config(rollout={"infra_retries": 0}), EXAMPLES / "write-hello", fake.url, tmp_path)

    assert outcome.status is expected, outcome.details
    assert outcome.harness_exit_code == 2 and outcome.num_calls == len(fake.requests) >= 1
    if expected is RolloutStatus.INFRA_ERROR:
        assert f"failed upstream (last: HTTP {status}" in outcome.details


@pytest.mark.parametrize(
    ("verify", "timeout_s", "expected"),
    [
        ("raise RuntimeError('verifier bug')", 10, "verifier crashed"),
        ("import sys; sys.exit(3)", 10, "exited with code 3"),
        ("import time; time.sleep(60)", 0.5, "ran past its timeout of 0.5s"),
        ("print('{\"reward\": NaN}')", 10, "must be a finite number"),
    ],
    ids=["exception", "odd-exit-code", "timeout", "nan-reward"],
)
def test_broken_verifier_is_verifier_error(
    proxy, rollout_config, make_task, tmp_path: Path, verify: str, timeout_s: float, expected: str
) -> None:
    verifier = {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": timeout_s}
    task = make_task("bad-verifier", verify=verify, verifier=verifier)

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=ANSWER_DONE)

    assert outcome.status is RolloutStatus.VERIFIER_ERROR
    assert expected in outcome.details
    assert outcome.reward is None


def test_proxy_down_is_infra_error(rollout_config, make_task, tmp_path: Path) -> None:
    marker = tmp_path / "harness-ran"
    harness = PythonHarness(f"open({str(marker)!r}, 'w')")

    outcome = _rollout(
        rollout_config(rollout={"infra_retries": 0}), make_task("offline"), f"http://127.0.0.1:{unshared_port()}", tmp_path,
        adapter=harness, proxy_wait_s=0.5,
    )  # fmt: skip

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert "recording proxy not reachable" in outcome.details
    assert not marker.exists()
    assert (tmp_path / "out" / OUTCOME_FILE).exists()


def test_unexpected_runner_error_still_writes_an_outcome(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    class Broken(PythonHarness):
        def command(self, run: HarnessRun) -> HarnessCommand:
            raise RuntimeError("adapter exploded")

    outcome = _rollout(rollout_config(), make_task("broken"), proxy.url, tmp_path, adapter=Broken(""))

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert "adapter exploded" in outcome.details
    written = Outcome.model_validate_json((tmp_path / "out" / OUTCOME_FILE).read_text())
    assert written.status is RolloutStatus.INFRA_ERROR


def test_task_folder_of_another_task_is_infra_error(proxy, rollout_config, tmp_path: Path) -> None:
    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", proxy.url, tmp_path, rollout_id="count-lines-s1")

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert (outcome.task_id, outcome.sample_index) == ("count-lines", 1)
    assert "holds task 'write-hello'" in outcome.details


def test_missing_trajectory_is_noted(fake_openai, rollout_config, tmp_path: Path) -> None:
    fake = fake_openai([Turn(content="done")])  # records nothing

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path, adapter=ANSWER_DONE)

    assert outcome.status is RolloutStatus.OK and outcome.num_calls == 0
    assert "no trajectory file" in outcome.details


def test_calls_recorded_by_a_proxy_writing_elsewhere_are_an_infra_error(
    fake_openai, rollout_config, tmp_path: Path
) -> None:
    # What a pod reaching another pod's proxy looks like: the calls were recorded, just
    # not where this rollout's trajectory is read from. Training must not see it as ok.
    (tmp_path / "elsewhere").mkdir()
    turns = [shell_call("printf hello > hello.txt"), Turn(content="done")]
    fake = fake_openai(turns, record_dir=tmp_path / "elsewhere")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path)

    assert outcome.status is RolloutStatus.INFRA_ERROR and outcome.reward is None
    assert "recorded 2 calls for this rollout but" in outcome.details and "holds 0" in outcome.details
    assert (tmp_path / "elsewhere" / "write-hello-s0.jsonl").exists()


def test_a_trajectory_flag_naming_another_file_is_an_infra_error_naming_the_right_one(
    fake_openai, rollout_config, tmp_path: Path
) -> None:
    # A hand-written manifest's --trajectory: right folder, wrong name for this rollout.
    (tmp_path / "trajectories").mkdir()
    fake = fake_openai([shell_call("printf hello > hello.txt"), Turn(content="done")], record_dir=tmp_path / "trajectories")

    outcome = run_rollout(
        rollout_config(),
        iteration=0,
        rollout_id="write-hello-s0",
        task_dir=EXAMPLES / "write-hello",
        proxy_url=fake.url,
        trajectory=tmp_path / "trajectories" / "write-hello.jsonl",
        out_dir=tmp_path / "out",
    )

    assert outcome.status is RolloutStatus.INFRA_ERROR and outcome.reward is None
    assert "names this rollout's file write-hello-s0.jsonl (--trajectory names write-hello.jsonl)" in outcome.details


def test_invalid_trajectory_is_noted(fake_openai, rollout_config, tmp_path: Path) -> None:
    fake = fake_openai([Turn(content="done")])
    (tmp_path / "trajectories").mkdir()
    (tmp_path / "trajectories" / "write-hello-s0.jsonl").write_text("{not json}\n")

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", fake.url, tmp_path, adapter=ANSWER_DONE)

    assert outcome.num_calls == 0
    assert "not valid JSON" in outcome.extra["trajectory_error"]
    assert "trajectory unreadable" in outcome.details


def test_harness_gets_isolated_environment(
    proxy, rollout_config, make_task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv(CONFIG_ENV, "name: x")
    dump = tmp_path / "env.json"
    harness = PythonHarness(f"""
        import json, os
        json.dump({{"env": dict(os.environ), "cwd": os.getcwd(), "files": os.listdir()}}, open({str(dump)!r}, "w"))
    """)
    task = make_task("isolated", workspace="files")
    (task / "files").mkdir()
    (task / "files" / "data.txt").write_text("x")

    _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=harness)

    seen = json.loads(dump.read_text())
    env = seen["env"]
    assert "AWS_SECRET_ACCESS_KEY" not in env and CONFIG_ENV not in env
    assert env["HTTPS_PROXY"] == env["https_proxy"] == env["HTTP_PROXY"]
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:") and env["NODE_USE_ENV_PROXY"] == "1"
    assert "127.0.0.1" in env["NO_PROXY"].split(",")
    assert seen["files"] == ["data.txt"]
    assert not Path(seen["cwd"]).exists(), "the workspace was not cleaned up"
    assert env["HOME"] != os.environ.get("HOME")


def test_outside_requests_are_refused_on_loopback_and_listed_in_the_outcome(
    proxy, rollout_config, tmp_path: Path
) -> None:
    harness = PythonHarness("""
        import os, urllib.request
        for url in ("https://outside.invalid/telemetry", "http://outside.invalid/update"):
            try:
                urllib.request.urlopen(url, timeout=5)
            except OSError as exc:
                print(url, exc)
        open(os.environ["ANSWER_FILE"], "w").write("done")
    """)

    outcome = _rollout(rollout_config(), EXAMPLES / "write-hello", proxy.url, tmp_path, adapter=harness)

    assert outcome.harness_exit_code == 0 and outcome.final_answer == "done"
    assert outcome.extra["egress_refused"] == [
        "CONNECT outside.invalid:443",
        "GET http://outside.invalid/update",
    ]


def test_rollout_command_writes_outcome(proxy, rollout_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    monkeypatch.setenv(CONFIG_ENV, yaml.safe_dump(rollout_config().model_dump(mode="json", exclude_defaults=True)))
    task_dir = tmp_path / "task"
    shutil.copytree(EXAMPLES / "write-hello", task_dir)  # the snapshot's folder name need not match

    result = _invoke_rollout(proxy.url, task_dir, tmp_path)

    assert result.exit_code == 0, result.output
    outcome = Outcome.model_validate_json((tmp_path / "out" / OUTCOME_FILE).read_text())
    assert outcome.status is RolloutStatus.OK and outcome.num_calls == 1
    assert "write-hello-s2: ok reward=0" in result.output


def test_rollout_command_without_config_records_infra_error(
    proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CONFIG_ENV, raising=False)

    result = _invoke_rollout(proxy.url, EXAMPLES / "write-hello", tmp_path)

    assert result.exit_code == 1
    outcome = Outcome.model_validate_json((tmp_path / "out" / OUTCOME_FILE).read_text())
    assert outcome.status is RolloutStatus.INFRA_ERROR and CONFIG_ENV in outcome.details


def _invoke_rollout(proxy_url: str, task_dir: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from pipelines.steps.cli import step_app

    args = [
        "rollout", "--iteration", "0", "--rollout-id", "write-hello-s2", "--task-dir", str(task_dir),
        "--proxy-url", proxy_url, "--trajectory", str(tmp_path / "trajectories" / "write-hello-s2.jsonl"),
        "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    return CliRunner().invoke(step_app, args)


def test_sigterm_to_the_rollout_step_kills_the_harness(fake_openai, rollout_config, tmp_path: Path) -> None:
    import subprocess
    import time

    import psutil
    import yaml

    from components.core.services import openforge_argv

    fake = fake_openai([Turn(content="late")], delay_s=120)  # the harness waits on its first call
    env = {**os.environ, CONFIG_ENV: yaml.safe_dump(rollout_config().model_dump(mode="json", exclude_defaults=True))}
    argv = openforge_argv(
        "step", "rollout", "--iteration", "0", "--rollout-id", "write-hello-s0",
        "--task-dir", str(EXAMPLES / "write-hello"), "--proxy-url", fake.url,
        "--trajectory", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    step = subprocess.Popen(argv, env=env, cwd=Path(__file__).resolve().parents[3])
    try:
        deadline = time.monotonic() + 60
        while not fake.requests and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fake.requests, "the harness never called the model"
        harness = psutil.Process(step.pid).children(recursive=True)
        assert harness

        step.terminate()
        step.wait(30)

        assert step.returncode == 128 + 15
        gone, alive = psutil.wait_procs(harness, timeout=5)
        assert not alive, f"{alive} outlived the rollout step"
    finally:
        step.kill()


def test_missing_harness_is_an_infra_error_naming_the_install_command(
    proxy, rollout_config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENFORGE_HARNESS_HOME", str(tmp_path / "no-harnesses"))

    outcome = _rollout(rollout_config(harness={"name": "codex"}), EXAMPLES / "write-hello", proxy.url, tmp_path)

    assert outcome.status is RolloutStatus.INFRA_ERROR
    assert "`openforge harness install codex`" in outcome.details
    assert outcome.harness_exit_code is None  # nothing was started
