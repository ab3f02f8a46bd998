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
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int | None  # None when the command ran out of time
    stdout_path: Path
    stderr_path: Path

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def tail(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def run_in_session(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float, log_prefix: Path
) -> ProcessResult:
    """Run ``argv`` in a new session for at most ``timeout_s``; stdout and stderr go to files.

    Files, not pipes: a chatty process can never block on a full pipe, and the output
    survives the process being killed.
    """
    stdout_path, stderr_path = log_prefix.with_suffix(".stdout"), log_prefix.with_suffix(".stderr")
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
    exit_code: int | None
    try:
        exit_code = process.wait(timeout=max(timeout_s, 0.0))
    except subprocess.TimeoutExpired:
        exit_code = None
    finally:
        kill_session(process.pid)
        process.wait()
    return ProcessResult(exit_code, stdout_path, stderr_path)


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
