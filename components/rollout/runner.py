"""The rollout runner: one task, one harness run, one verdict, one outcome record.

Steps: fresh workspace from the task's files; wait for the recording proxy; run the
harness against ``<proxy>/s/<rollout_id>/v1`` under the time limit; run the verifier in
the workspace; flush the proxy; count the recorded calls; write ``outcome.json``. An
outcome is written whatever fails, so scoring always knows what became of a rollout.
An attempt the infrastructure failed (engine or proxy) is retried, at most
``rollout.infra_retries`` times, with a fresh workspace and HOME, after a backoff and
once the engine answers again, all inside the one time limit; attempt k > 0 talks to
``<proxy>/s/<rollout_id>/a/<k>/v1`` so its calls carry ``tags["attempt"] = k``.
A web task or a browser harness also gets, per attempt, its app and a browser
(``_gui.py``), a desktop task or a desktop harness its own X display (``_desktop.py``);
either is stopped past ``harness.max_turns`` recorded model calls.
The runner has no storage access: its inputs and outputs are plain files and folders.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from components.core.config import ExperimentConfig
from components.core.outcome import Outcome, RolloutStatus
from components.core.rollout_identity import OUTCOME_FILE, parse_rollout_id, session_route, trajectory_file
from components.core.services import ServiceError, wait_healthy
from components.core.trajectory import RecordedCall, TrajectoryError, latest_attempt, model_tokens, read_session
from components.environments import DesktopEnvironment, EnvironmentSetupError
from components.rollout._attempt_dir import attempt_dir
from components.rollout._confine import confined, confinement_problem
from components.rollout._cut import CutPoll, first_reason
from components.rollout._desktop import open_desktop
from components.rollout._gui import CallCounter, Gui, open_gui
from components.rollout._failures import blame, verdict
from components.proxy.auth import SECRET_ENV
from components.rollout._process import run_in_session, tail
from components.rollout._proxy_link import API_KEY, flush_session, harness_api_key, proxy_requires_tokens, wait_for_engine
from components.rollout._record import Record
from components.rollout.egress import EgressSink
from components.rollout.harnesses import HarnessAdapter, HarnessNotInstalledError, HarnessRun, get_harness
from components.rollout.tasks import Task, TaskError, load_task

__all__ = ["run_rollout", "verdict", "write_outcome"]

MODEL_NAME = "openforge-policy"  # the proxy sends its own served model name upstream
PROXY_WAIT_S = 60.0
RETRY_BACKOFF_S = 2.0  # before retry k: RETRY_BACKOFF_S * 2**(k-1), then wait for the engine
_MAX_ANSWER_CHARS = 16_000
# The harness and verifier hold no storage or tracking credentials.
_SECRET_PREFIXES = ("AWS_", "MLFLOW_", "OPENFORGE_")
# How a harness run ended, for the runner's next step.
_ENDED, _FAILED, _STOPPED = "ended", "failed", "stopped"


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
    record = Record(rollout_id=rollout_id, task_id=task_id, sample_index=sample_index, iteration=iteration)
    rollout = _Rollout(config, record, Path(task_dir), proxy_url.rstrip("/"), Path(trajectory), proxy_wait_s)
    try:
        rollout.run(adapter or get_harness(config.harness.name, config=config.harness), started)
    except TaskError as exc:
        record.fail(RolloutStatus.INFRA_ERROR, f"task folder unusable: {exc}")
    except HarnessNotInstalledError as exc:
        record.fail(RolloutStatus.INFRA_ERROR, str(exc))
    except EnvironmentSetupError as exc:
        record.fail(RolloutStatus.INFRA_ERROR, f"GUI environment did not start: {exc}")
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


class _Rollout:
    def __init__(
        self,
        config: ExperimentConfig,
        record: Record,
        task_dir: Path,
        proxy_url: str,
        trajectory: Path,
        proxy_wait_s: float,
    ) -> None:
        self.config, self.record = config, record
        self.task_dir, self.proxy_url, self.trajectory = task_dir, proxy_url, trajectory
        self.proxy_wait_s = proxy_wait_s
        self.api_key = harness_api_key(record.rollout_id)
        self.cut = CutPoll(proxy_url) if config.rollout.finish_fraction < 1 else None

    def run(self, adapter: HarnessAdapter, started: float) -> None:
        adapter.require_installed()
        task = load_task(self.task_dir, match_folder_name=False)
        if task.id != self.record.task_id:
            raise TaskError(f"{self.task_dir} holds task {task.id!r}, not {self.record.task_id!r} of this rollout id")
        time_limit = task.time_limit_s or self.config.rollout.time_limit_s
        deadline = started + time_limit
        self.record.extra.update(harness=adapter.name, harness_version=adapter.version, time_limit_s=time_limit)
        attempt = 0
        with EgressSink() as sink:
            while True:
                self.record.extra["attempts"] = attempt + 1
                self._attempt(adapter, task, attempt, deadline, sink)
                if self.record.status is not RolloutStatus.INFRA_ERROR or attempt >= self.config.rollout.infra_retries:
                    break
                if not self._ready_for_retry(attempt + 1, deadline):
                    break
                self.record.retry(attempt)
                attempt += 1
            self._flush()
            # Refused, so harmless; recorded so a new harness release's phoning home shows.
            self.record.extra["egress_refused"] = [f"{a.method} {a.target}" for a in sink.attempts]
        self._count_calls(attempt)

    def _attempt(self, adapter: HarnessAdapter, task: Task, attempt: int, deadline: float, sink: EgressSink) -> None:
        # An agent can leave files its cleanup cannot remove; that must not sink the outcome.
        with attempt_dir(self.record.rollout_id) as tmp:
            workspace, scratch = _prepare_dirs(task, tmp)
            env = _isolated_env(home=scratch / "home", proxy_env=sink.proxy_env())
            if not self._wait_for_proxy(deadline):
                return
            if self.cut and (reason := self.cut.reason()):
                self.record.fail(RolloutStatus.CUT, f"{reason}; the harness never started")
                return
            screens = open_gui(task, adapter, self.record), open_desktop(task, adapter, self.record, workspace, env)
            with screens[0] as gui, screens[1] as desktop:
                env |= desktop.env() if desktop else {}  # the display: the harness's and the verifier's
                ended = self._run_harness(adapter, task, attempt, workspace, scratch, env, deadline, gui, desktop)
                if ended == _ENDED:
                    # The app's state endpoint and token: the verifier's only, never the harness's.
                    self._run_verifier(task, workspace, scratch, {**env, **(gui.verifier_env() if gui else {})})
                elif ended == _FAILED:
                    self._judge_failure(attempt)

    def _wait_for_proxy(self, deadline: float) -> bool:
        wait_s = min(self.proxy_wait_s, deadline - time.monotonic())
        try:
            wait_healthy(f"{self.proxy_url}/health", max(wait_s, 0.1))
        except ServiceError as exc:
            self.record.fail(RolloutStatus.INFRA_ERROR, f"recording proxy not reachable: {exc}")
            return False
        if self.api_key == API_KEY and proxy_requires_tokens(self.proxy_url):
            # Every call would be refused: a set-up mistake, not a failure of the agent's to train on.
            self.record.fail(
                RolloutStatus.INFRA_ERROR,
                f"the proxy at {self.proxy_url} requires per-session tokens but the runner has no secret: "
                f"give the rollout step the proxy's secret in {SECRET_ENV}",
            )
            return False
        return True

    def _ready_for_retry(self, attempt: int, deadline: float) -> bool:
        """Back off, then wait until the proxy reaches the engine; False (noted) when time runs out."""
        delay = RETRY_BACKOFF_S * 2 ** (attempt - 1)
        if time.monotonic() + delay >= deadline:
            self.record.notes.append(f"not retried: no time left for attempt {attempt} within the time limit")
            return False
        time.sleep(delay)
        problem = wait_for_engine(self.proxy_url, deadline)
        if problem is not None:
            limit = self.record.extra["time_limit_s"]
            self.record.notes.append(
                f"not retried: the engine did not come back within the rollout's time limit of {limit:g}s ({problem})"
            )
            return False
        return True

    def _run_harness(
        self,
        adapter: HarnessAdapter,
        task: Task,
        attempt: int,
        workspace: Path,
        scratch: Path,
        env: dict[str, str],
        deadline: float,
        gui: Gui | None = None,
        desktop: DesktopEnvironment | None = None,
    ) -> str:
        """Run the harness; how it ended (a failure is recorded in the outcome)."""
        unconfined = confinement_problem()
        self.record.extra["harness_confined"] = unconfined is None
        if unconfined is not None and f"the harness ran unconfined: {unconfined}" not in self.record.notes:
            self.record.notes.append(f"the harness ran unconfined: {unconfined}")
        run = HarnessRun(
            rollout_id=self.record.rollout_id,
            base_url=f"{session_route(self.proxy_url, self.record.rollout_id, attempt)}/v1",
            api_key=self.api_key,
            model=MODEL_NAME,
            prompt=gui.render_prompt(task.prompt) if gui else task.prompt,
            workspace=workspace,
            scratch_dir=scratch,
            max_turns=self.config.harness.max_turns,
            max_tokens=self.config.harness.max_tokens,
            time_limit_s=deadline - time.monotonic(),
            browser_cdp_url=gui.cdp_url if gui else None,
            display=desktop.display if desktop else None,
            confined=unconfined is None,
        )
        command = adapter.command(run)
        argv = command.argv
        if unconfined is None:
            hidden = self._hidden((self.task_dir, self.trajectory.parent), workspace, scratch)
            argv = confined(command.argv, hidden, _writable(workspace, scratch))
        steps = CallCounter(self.trajectory, self.config.harness.max_turns) if gui or desktop else None
        cap_mb = self.config.rollout.max_output_mb
        result = run_in_session(
            argv,
            cwd=workspace,
            env={**env, **command.env},
            timeout_s=deadline - time.monotonic(),
            log_prefix=scratch / "harness",
            max_output_bytes=int(cap_mb * 2**20),
            stop=first_reason(steps.check if steps else None, self.cut.reason if self.cut else None),
        )
        self.record.harness_exit_code = result.exit_code
        answer = adapter.final_answer(run, result.stdout())
        self.record.final_answer = None if answer is None else answer[:_MAX_ANSWER_CHARS]
        if result.output_capped is not None:
            self.record.fail(
                RolloutStatus.HARNESS_ERROR,
                f"harness {adapter.name} wrote more than {cap_mb:g} MB to its {result.output_capped} "
                "(rollout.max_output_mb) and was killed",
            )
            return _STOPPED
        if result.stopped is not None and self.cut and result.stopped == self.cut.reason():
            self.record.fail(RolloutStatus.CUT, f"{result.stopped}; the harness was stopped")
            return _STOPPED
        if result.stopped is not None:
            self.record.extra["step_limit"] = self.config.harness.max_turns
            self.record.fail(RolloutStatus.STEP_LIMIT, result.stopped)
            return _STOPPED
        if result.timed_out:
            limit = self.record.extra["time_limit_s"]
            self.record.fail(RolloutStatus.TIMEOUT, f"the rollout ran past its time limit of {limit:g}s (killed)")
            return _FAILED
        if result.exit_code != 0:
            self.record.fail(
                RolloutStatus.HARNESS_ERROR,
                f"harness {adapter.name} exited with code {result.exit_code}: "
                f"{tail(result.stderr(), 2000) or '<no stderr>'}",
            )
            return _FAILED
        return _ENDED

    @staticmethod
    def _hidden(candidates: tuple[Path, ...], workspace: Path, scratch: Path) -> list[Path]:
        """The ``candidates`` that can be covered without covering the rollout's own folders
        (components/rollout/_confine.py)."""
        own = (workspace.absolute(), scratch.absolute())
        return [p.absolute() for p in candidates if p.is_dir() and not any(o.is_relative_to(p.absolute()) for o in own)]

    def _judge_failure(self, attempt: int) -> None:
        """Blame the engine, the context or the agent for a failed harness run (see _failures.py)."""
        try:
            wait_healthy(f"{self.proxy_url}/health", 2.0)
        except ServiceError as exc:
            self.record.reclassify(RolloutStatus.INFRA_ERROR, f"the recording proxy stopped answering: {exc}")
            return
        self._flush()
        calls = self._read_calls()
        judged = blame(latest_attempt(calls or [], attempt))
        if judged is not None:
            self.record.reclassify(*judged)

    def _run_verifier(self, task: Task, workspace: Path, scratch: Path, env: dict[str, str]) -> None:
        if not workspace.is_dir():
            # The agent deleted (or replaced) its own workspace: its doing, so it is graded
            # like any other result, by the verifier, in an empty workspace.
            if workspace.is_symlink() or workspace.exists():
                workspace.unlink()
            workspace.mkdir(parents=True)
            self.record.notes.append("the harness deleted its workspace; the verifier ran in an empty one")
        scratch.mkdir(parents=True, exist_ok=True)
        answer_file = scratch / "final_answer.txt"
        answer_file.write_text(self.record.final_answer or "")
        argv = task.verifier_argv(workspace)
        # The verifier runs the agent's code (its tests import what the agent wrote), so it
        # is confined too, in a fresh namespace: it reads the task, never the call records.
        self.record.extra["verifier_confined"] = confinement_problem() is None
        if confinement_problem() is None:
            hidden = self._hidden((self.trajectory.parent,), workspace, scratch)
            argv = confined(argv, hidden, _writable(workspace, scratch))
        result = run_in_session(
            argv,
            cwd=workspace,
            env={
                **env,
                "OPENFORGE_FINAL_ANSWER": str(answer_file),
                "OPENFORGE_TASK_DIR": str(task.task_dir),
                "OPENFORGE_WORKSPACE": str(workspace),
            },
            timeout_s=task.verifier.timeout_s,
            log_prefix=scratch / "verifier",
            max_output_bytes=int(self.config.rollout.max_output_mb * 2**20),
        )
        stdout, stderr = result.stdout(), result.stderr()
        self.record.verifier_output = tail(f"{stdout}\n{stderr}", 2000)
        if result.output_capped is not None:
            limit = self.config.rollout.max_output_mb
            self.record.fail(RolloutStatus.VERIFIER_ERROR, f"verifier wrote more than {limit:g} MB to its {result.output_capped}")
            return
        if result.timed_out:
            limit = task.verifier.timeout_s
            self.record.fail(RolloutStatus.VERIFIER_ERROR, f"verifier ran past its timeout of {limit:g}s")
            return
        try:
            self.record.passed, self.record.reward = verdict(result.exit_code, stdout, stderr)
        except ValueError as exc:
            self.record.fail(RolloutStatus.VERIFIER_ERROR, str(exc))

    def _flush(self) -> None:
        try:
            self.record.extra["proxy_calls"] = flush_session(self.proxy_url, self.record.rollout_id, self.api_key)
        except (OSError, ValueError) as exc:  # urllib's errors are OSErrors
            # Calls are on disk before the harness sees their answers; a failed flush is
            # worth a note, not the rollout.
            self.record.notes.append(f"proxy flush failed: {exc}")

    def _read_calls(self) -> list[RecordedCall] | None:
        try:
            return read_session(self.trajectory)
        except FileNotFoundError:
            return None
        except (TrajectoryError, OSError) as exc:
            self.record.extra["trajectory_error"] = str(exc)
            return None

    def _count_calls(self, attempt: int) -> None:
        self.record.extra.pop("trajectory_error", None)
        calls = self._read_calls()
        recorded, on_disk = self.record.extra.get("proxy_calls") or 0, len(calls or ())
        if on_disk < recorded:
            # Training on this rollout would use a trajectory that is not there: the
            # harness's calls were recorded by a proxy that writes somewhere else. The
            # --trajectory flag and the proxy's --out are given separately (the manifest,
            # or whoever runs the step by hand), so they can still disagree.
            self.record.reclassify(
                RolloutStatus.INFRA_ERROR,
                f"the proxy at {self.proxy_url} recorded {recorded} calls for this rollout but {self.trajectory} "
                f"holds {on_disk}: {self._misplaced_trajectory()}",
            )
        if calls is None:
            if "trajectory_error" in self.record.extra:
                self.record.notes.append(f"trajectory unreadable: {self.record.extra['trajectory_error']}")
            else:
                self.record.notes.append(f"no trajectory file at {self.trajectory} (no model call recorded)")
            return
        # Earlier attempts stay in the file, but the outcome speaks for the judged one.
        judged = latest_attempt(calls, attempt)
        self.record.num_calls = len(judged)
        spent = self.record.extra["model_tokens"] = model_tokens(judged)  # a recorded teacher's cost, by its own count
        teacher = self.config.recording_teacher
        if teacher is not None and teacher.usd_per_million_tokens is not None:
            self.record.extra["teacher_cost_usd"] = teacher.usd_per_million_tokens.cost(spent)
        if attempt:
            self.record.extra["calls_all_attempts"] = len(calls)

    def _misplaced_trajectory(self) -> str:
        """Where the recorded calls went instead, as far as the runner can tell."""
        expected = trajectory_file(self.record.rollout_id)
        if self.trajectory.name != expected:
            return f"the proxy names this rollout's file {expected} (--trajectory names {self.trajectory.name})"
        return "that proxy writes to another folder (is its --out this trajectory's folder, and is the port this pod's own?)"


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


def _writable(workspace: Path, scratch: Path) -> list[Path]:
    """What a confined harness or verifier may write: its folders and /tmp."""
    return [p for p in (workspace, scratch, Path(tempfile.gettempdir())) if p.is_dir()]
