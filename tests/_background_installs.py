"""Waiting for what `make test` installs in the background (Makefile: system-background).

apt packages, the podman image and vLLM's CPU build (``make vllm``) install while pip runs; `make test` names each job's
status file in an environment variable, and the tests that need the job wait here for
it, then skip, saying why, only where it failed (fail under CI=true: tests/_missing.py).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

WAIT_S = 900


def background_install_problem(status_env: str, what: str, make_target: str) -> str | None:
    """Wait for the job whose status file ``$status_env`` names; why it failed, or None.

    None too when the variable is unset (pytest run by hand: the caller checks the machine).
    """
    status_path = os.environ.get(status_env)
    if not status_path:
        return None
    status = Path(status_path)
    log = status.with_suffix(".log")
    deadline = time.monotonic() + WAIT_S
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(1)
    if not status.exists():
        return f"the background {what} (`make {make_target}`) did not finish in {WAIT_S} s; {log} ends: {_tail(log)}"
    code = status.read_text().strip()
    if code != "0":
        return f"`make {make_target}` failed here (exit {code}); {log} ends: {_tail(log)}"
    return None


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-800:].strip() if log.exists() else "(no log written)"
