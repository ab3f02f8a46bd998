"""Run a command with a deadline and leave nothing of it behind.

Harnesses and verifiers start processes of their own (shells, language servers, a
`sleep 1000 &` left by the agent), often in process groups of their own. Each command
therefore starts a new session, and when it ends, or runs out of time, every process
still in that session is killed, whatever group it moved to.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_POLL_S = 0.1  # how often the output cap is checked; a flood overshoots by what it writes in this time


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None  # None when the command ran out of time or was stopped for its output
    stdout_path: Path
    stderr_path: Path
    output_capped: str | None = None  # "stdout" or "stderr" when that file outgrew the cap (killed)
    stopped: str | None = None  # why the caller's ``stop`` check had it killed

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None and self.output_capped is None and self.stopped is None

    def stdout(self) -> str:
        return _read_log(self.stdout_path)

    def stderr(self) -> str:
        return _read_log(self.stderr_path)


def _read_log(path: Path) -> str:
    # The command may have deleted its own log (an agent running rm -rf in the wrong place).
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def run_in_session(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    log_prefix: Path,
    max_output_bytes: int | None = None,
    stop: Callable[[], str | None] | None = None,
) -> ProcessResult:
    """Run ``argv`` in a new session for at most ``timeout_s``; stdout and stderr go to files.

    Files, not pipes: a chatty process can never block on a full pipe, and the output
    survives the process being killed. With ``max_output_bytes``, a command whose stdout
    or stderr file outgrows it is killed and the file cut to the cap, so a flooding
    harness can neither fill the disk nor make its reader load gigabytes. (Not
    RLIMIT_FSIZE: that would also stop the agent writing a large file in its workspace.)
    ``stop``, checked as often as the cap, returns a reason to kill the command (a GUI
    rollout's step limit), or None to let it run.
    """
    stdout_path, stderr_path = log_prefix.with_suffix(".stdout"), log_prefix.with_suffix(".stderr")
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
    exit_code: int | None = None
    capped: str | None = None
    stopped: str | None = None
    deadline = time.monotonic() + max(timeout_s, 0.0)
    try:
        while True:
            left = deadline - time.monotonic()
            try:
                exit_code = process.wait(timeout=max(min(left, _POLL_S), 0.0))
                break
            except subprocess.TimeoutExpired:
                pass
            if max_output_bytes is not None:
                capped = _outgrown(stdout_path, stderr_path, max_output_bytes)
                if capped is not None:
                    break
            if stop is not None:
                stopped = stop()
                if stopped is not None:
                    break
            if left <= 0:
                break
    finally:
        kill_session(process.pid)
        process.wait()
    if max_output_bytes is not None:
        for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
            if _size(path) > max_output_bytes:
                capped = capped or name  # outgrown between the last check and the kill
                os.truncate(path, max_output_bytes)
    if capped is not None or stopped is not None:
        exit_code = None
    return ProcessResult(exit_code, stdout_path, stderr_path, capped, stopped)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _outgrown(stdout_path: Path, stderr_path: Path, limit: int) -> str | None:
    for name, path in (("stdout", stdout_path), ("stderr", stderr_path)):
        if _size(path) > limit:
            return name
    return None


def kill_session(sid: int, rounds: int = 50) -> None:
    """SIGKILL every live process of session ``sid``; repeat while forks race the killing."""
    if not _PROC.is_dir():  # no /proc (macOS): the session leader's group is the best we can do
        _kill_group(sid)
        return
    for _ in range(rounds):
        members = _session_members(sid)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _session_members(sid: int) -> list[int]:
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if os.getsid(pid) == sid and not _is_zombie(entry):
                members.append(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return members


def _is_zombie(entry: Path) -> bool:
    # A zombie is already dead (only its parent's wait() is missing) and cannot be killed.
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
