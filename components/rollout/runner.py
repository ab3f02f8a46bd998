"""The rollout runner: one task, one harness run, one verdict, one outcome record.

Steps: fresh workspace from the task's files; wait for the recording proxy; run the
harness against ``<proxy>/s/<rollout_id>/v1`` under the time limit; run the verifier in
the workspace; flush the proxy; count the recorded calls; write ``outcome.json``. An
outcome is written whatever fails, so scoring always knows what became of a rollout.
The runner has no storage access: its inputs and outputs are plain files and folders.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome, RolloutStatus
from components.core.services import ServiceError, wait_healthy
from components.core.trajectory import TrajectoryError, read_session
from components.rollout._process import run_in_session, tail
from components.rollout.egress import EgressSink
from components.rollout.harnesses import HarnessAdapter, HarnessNotInstalledError, HarnessRun, get_harness
from components.rollout.tasks import Task, TaskError, load_task

OUTCOME_FILE = "outcome.json"
API_KEY = "openforge-rollout"  # the proxy checks no key; harnesses insist on having one
MODEL_NAME = "openforge-policy"  # the proxy sends its own served model name upstream
PROXY_WAIT_S = 60.0
FLUSH_TIMEOUT_S = 10.0
_MAX_ANSWER_CHARS = 16_000
_ROLLOUT_ID = re.compile(r"^(?P<task_id>[a-z0-9][a-z0-9-]*)-s(?P<sample>\d+)$")
# The harness and verifier hold no storage or tracking credentials.
_SECRET_PREFIXES = ("AWS_", "MLFLOW_", "OPENFORGE_")
_PYTHON_CRASH = "Traceback (most recent call last)"


def parse_rollout_id(rollout_id: str) -> tuple[str, int]:
    """``(task_id, sample_index)`` from ``<task_id>-s<sample_index>``."""
    match = _ROLLOUT_ID.match(rollout_id)
    if match is None:
        raise ValueError(f"rollout id {rollout_id!r} is not <task_id>-s<sample_index> (e.g. write-hello-s0)")
    return match["task_id"], int(match["sample"])


def run_rollout(
    config: ExperimentConfig,
    *,
    iteration: int,
    rollout_id: str,
    task_dir: Path,
    proxy_url: str,
    trajectory: Path,
    out_dir: Path,
    adapter: HarnessAdapter | None = None,
    proxy_wait_s: float = PROXY_WAIT_S,
) -> Outcome:
    """Run one rollout end to end and write ``out_dir/outcome.json``; never raises for rollout failures."""
    started = time.monotonic()
    task_id, sample_index = parse_rollout_id(rollout_id)
    record = _Record(rollout_id=rollout_id, task_id=task_id, sample_index=sample_index, iteration=iteration)
    rollout = _Rollout(config, record, Path(task_dir), proxy_url.rstrip("/"), Path(trajectory), proxy_wait_s)
    try:
        rollout.run(adapter or get_harness(config.harness.name), started)
    except TaskError as exc:
        record.fail(RolloutStatus.INFRA_ERROR, f"task folder unusable: {exc}")
    except HarnessNotInstalledError as exc:
        record.fail(RolloutStatus.INFRA_ERROR, str(exc))
    except Exception as exc:  # the outcome must be written whatever went wrong
        record.fail(RolloutStatus.INFRA_ERROR, f"rollout runner failed unexpectedly: {exc!r}")
    outcome = record.outcome(duration_s=time.monotonic() - started)
    write_outcome(outcome, Path(out_dir))
    return outcome


def write_outcome(outcome: Outcome, out_dir: Path) -> Path:
    """Write ``out_dir/outcome.json`` atomically (a reader never sees half a record)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / OUTCOME_FILE
    tmp = path.with_name(f".{OUTCOME_FILE}.tmp")
    tmp.write_text(outcome.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)
    return path


@dataclass
class _Record:
    """The outcome as it is being filled in, step by step."""

    rollout_id: str
    task_id: str
    sample_index: int
    iteration: int
    status: RolloutStatus = RolloutStatus.OK
    reward: float | None = None
    passed: bool | None = None
    notes: list[str] = field(default_factory=list)
    harness_exit_code: int | None = None
    final_answer: str | None = None
    num_calls: int = 0
    verifier_output: str = ""
    extra: dict = field(default_factory=dict)

    def fail(self, status: RolloutStatus, note: str) -> None:
        # The first failure decides the status; later notes only add context.
        if self.status is RolloutStatus.OK:
            self.status = status
        self.notes.append(note)

    def blame_infrastructure(self, note: str) -> None:
        self.status = RolloutStatus.INFRA_ERROR
        self.notes.append(note)

    def outcome(self, duration_s: float) -> Outcome:
        ok = self.status is RolloutStatus.OK
        return Outcome(
            rollout_id=self.rollout_id,
            task_id=self.task_id,
            sample_index=self.sample_index,
            iteration=self.iteration,
            status=self.status,
            reward=self.reward if ok else None,
            passed=self.passed if ok else None,
            details="; ".join(self.notes),
            harness_exit_code=self.harness_exit_code,
            final_answer=self.final_answer,
            num_calls=self.num_calls,
            duration_s=duration_s,
            verifier_output=self.verifier_output,
            extra=self.extra,
        )


class _Rollout:
    def __init__(
        self,
        config: ExperimentConfig,
        record: _Record,
        task_dir: Path,
        proxy_url: str,
        trajectory: Path,
        proxy_wait_s: float,
    ) -> None:
        self.config, self.record = config, record
        self.task_dir, self.proxy_url, self.trajectory = task_dir, proxy_url, trajectory
        self.proxy_wait_s = proxy_wait_s

    def run(self, adapter: HarnessAdapter, started: float) -> None:
        adapter.require_installed()
        task = load_task(self.task_dir, match_folder_name=False)
        if task.id != self.record.task_id:
            raise TaskError(f"{self.task_dir} holds task {task.id!r}, not {self.record.task_id!r} of this rollout id")
        time_limit = task.time_limit_s or self.config.rollout.time_limit_s
        deadline = started + time_limit
        self.record.extra.update(harness=adapter.name, harness_version=adapter.version, time_limit_s=time_limit)
        # An agent can leave files its cleanup cannot remove; that must not sink the outcome.
        prefix = f"openforge-{self.record.rollout_id}-"
        with (
            tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as tmp,
            EgressSink() as sink,
        ):
            workspace, scratch = _prepare_dirs(task, Path(tmp))
            env = _isolated_env(home=scratch / "home", proxy_env=sink.proxy_env())
            if self._wait_for_proxy(deadline):
                if self._run_harness(adapter, task, workspace, scratch, env, deadline):
                    self._run_verifier(task, workspace, scratch, env)
                self._flush()
            # Refused, so harmless; recorded so a new harness release's phoning home shows.
            self.record.extra["egress_refused"] = [f"{a.method} {a.target}" for a in sink.attempts]
        self._count_calls()

    def _wait_for_proxy(self, deadline: float) -> bool:
        wait_s = min(self.proxy_wait_s, deadline - time.monotonic())
        try:
            wait_healthy(f"{self.proxy_url}/health", max(wait_s, 0.1))
            return True
        except ServiceError as exc:
            self.record.fail(RolloutStatus.INFRA_ERROR, f"recording proxy not reachable: {exc}")
            return False

    def _run_harness(
        self, adapter: HarnessAdapter, task: Task, workspace: Path, scratch: Path, env: dict[str, str], deadline: float
    ) -> bool:
        """Run the harness; True when it ended normally (a failure is recorded in the outcome)."""
        run = HarnessRun(
            rollout_id=self.record.rollout_id,
            base_url=f"{self.proxy_url}/s/{self.record.rollout_id}/v1",
            api_key=API_KEY,
            model=MODEL_NAME,
            prompt=task.prompt,
            workspace=workspace,
            scratch_dir=scratch,
            max_turns=self.config.harness.max_turns,
            max_tokens=self.config.harness.max_tokens,
            time_limit_s=deadline - time.monotonic(),
        )
        command = adapter.command(run)
        result = run_in_session(
            command.argv,
            cwd=workspace,
            env={**env, **command.env},
            timeout_s=deadline - time.monotonic(),
            log_prefix=scratch / "harness",
        )
        self.record.harness_exit_code = result.exit_code
        answer = adapter.final_answer(run, result.stdout())
        self.record.final_answer = None if answer is None else answer[:_MAX_ANSWER_CHARS]
        if result.timed_out:
            limit = self.record.extra["time_limit_s"]
            self.record.fail(RolloutStatus.TIMEOUT, f"the rollout ran past its time limit of {limit:g}s (killed)")
            return False
        if result.exit_code != 0:
            self.record.fail(
                RolloutStatus.HARNESS_ERROR,
                f"harness {adapter.name} exited with code {result.exit_code}: "
                f"{tail(result.stderr(), 2000) or '<no stderr>'}",
            )
            return False
        return True

    def _run_verifier(self, task: Task, workspace: Path, scratch: Path, env: dict[str, str]) -> None:
        answer_file = scratch / "final_answer.txt"
        answer_file.write_text(self.record.final_answer or "")
        result = run_in_session(
            task.verifier_argv(workspace),
            cwd=workspace,
            env={
                **env,
                "OPENFORGE_FINAL_ANSWER": str(answer_file),
                "OPENFORGE_TASK_DIR": str(task.task_dir),
                "OPENFORGE_WORKSPACE": str(workspace),
            },
            timeout_s=task.verifier.timeout_s,
            log_prefix=scratch / "verifier",
        )
        stdout, stderr = result.stdout(), result.stderr()
        self.record.verifier_output = tail(f"{stdout}\n{stderr}", 2000)
        if result.timed_out:
            limit = task.verifier.timeout_s
            self.record.fail(RolloutStatus.VERIFIER_ERROR, f"verifier ran past its timeout of {limit:g}s")
            return
        try:
            self.record.passed, self.record.reward = verdict(result.exit_code, stdout, stderr)
        except ValueError as exc:
            self.record.fail(RolloutStatus.VERIFIER_ERROR, str(exc))

    def _flush(self) -> None:
        url = f"{self.proxy_url}/flush?session={self.record.rollout_id}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=FLUSH_TIMEOUT_S) as resp:
                counts = json.loads(resp.read()).get("sessions", {})
            self.record.extra["proxy_calls"] = counts.get(self.record.rollout_id)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            # Calls are on disk before the harness sees their answers; a failed flush is
            # worth a note, not the rollout.
            self.record.notes.append(f"proxy flush failed: {exc}")

    def _count_calls(self) -> None:
        try:
            calls = read_session(self.trajectory)
        except FileNotFoundError:
            self.record.notes.append(f"no trajectory file at {self.trajectory} (no model call recorded)")
            return
        except (TrajectoryError, OSError) as exc:
            self.record.extra["trajectory_error"] = str(exc)
            self.record.notes.append(f"trajectory unreadable: {exc}")
            return
        self.record.num_calls = len(calls)
        failed = [c for c in calls if c.upstream_status == 0 or c.upstream_status >= 500]
        if failed and self.record.status is RolloutStatus.HARNESS_ERROR:
            # A harness that gave up because the engine failed is not the agent's fault:
            # training must not learn from it.
            last = failed[-1]
            self.record.blame_infrastructure(
                f"{len(failed)} model call(s) failed upstream (last: HTTP {last.upstream_status}: {last.error})"
            )


def verdict(exit_code: int | None, stdout: str, stderr: str = "") -> tuple[bool, float]:
    """``(passed, reward)`` from a verifier's exit code and output; ValueError when it makes no sense."""
    if exit_code not in (0, 1):
        raise ValueError(f"verifier exited with code {exit_code}; it must exit 0 (passed) or 1 (failed)")
    if exit_code == 1 and _PYTHON_CRASH in stderr:
        # Python exits 1 on an uncaught exception: that is a broken verifier, not a failed rollout.
        raise ValueError(f"verifier crashed: {tail(stderr, 500)}")
    passed = exit_code == 0
    lines = stdout.strip().splitlines()
    last = lines[-1].strip() if lines else ""
    if not last.startswith("{"):
        return passed, 1.0 if passed else 0.0
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return passed, 1.0 if passed else 0.0  # a brace-led line of plain output, not a verdict
    if not isinstance(data, dict) or "reward" not in data:
        return passed, 1.0 if passed else 0.0
    reward = data["reward"]
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise ValueError(f"verifier printed reward {reward!r}; it must be a finite number")
    return passed, float(reward)


def _prepare_dirs(task: Task, root: Path) -> tuple[Path, Path]:
    workspace, scratch = root / "workspace", root / "scratch"
    if task.workspace_dir is not None:
        shutil.copytree(task.workspace_dir, workspace, symlinks=True)
    else:
        workspace.mkdir()
    (scratch / "home").mkdir(parents=True)
    return workspace, scratch


def _isolated_env(home: Path, proxy_env: dict[str, str]) -> dict[str, str]:
    # Nothing a harness does may leave the machine: outside hosts go to the refusing
    # egress sink; loopback, where the recording proxy is, is exempt.
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SECRET_PREFIXES)}
    env.update(proxy_env)
    env["HOME"] = str(home)
    return env
