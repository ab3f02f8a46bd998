"""The harness in a confinement of its own inside the rollout: it cannot touch its grader.

The rollout's main container runs the harness, then the verifier. Model-written commands
run in between, as the same user, so without more they could read the verifier (and any
answer it holds), rewrite it, rewrite the proxy's records of their own calls, or leave a
process behind (``setsid``, a double fork) that changes the workspace while the verifier
reads it. So the harness runs under bubblewrap in user and PID namespaces of its own:

- the file system is read-only but for the workspace, the harness's scratch folder (its
  home) and ``/tmp``; the task folder (verifier included) and the trajectory folder are
  covered by empty tmpfs: the harness neither reads nor writes them;
- its PID namespace ends with it, and the kernel kills everything still inside, so by
  the time the verifier starts nothing of the harness runs (a fresh start for the grader
  over the same workspace);
- everything else (the display, loopback, the engine's proxy) is as it was.

The verifier runs the same way (the task folder then readable, the trajectory folder still
covered): graders of code import what the agent wrote, which is model-written too.

It needs bubblewrap and user namespaces; where they are missing the harness runs without
it and the outcome says so (``notes``). docs/reliability.md lists the boundaries.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

_PROBE_TIMEOUT_S = 30


def confined(argv: Sequence[str], hidden: Sequence[Path], writable: Sequence[Path] = ()) -> list[str]:
    """``argv`` in its own user and PID namespaces: the file system read-only but ``writable``
    (and a fresh ``/dev/shm``), ``hidden`` folders covered."""
    # Only the outermost: a folder bound inside another bound one would become a mount
    # point, which the harness could then not delete (an agent's `rm -rf` of its workspace).
    outermost = [p for p in writable if not any(p != q and p.is_relative_to(q) for q in writable)]
    opened = [arg for path in sorted(set(outermost), key=lambda p: len(p.parts)) for arg in ("--bind", str(path), str(path))]
    covers = [arg for path in hidden for arg in ("--tmpfs", str(path))]
    return [
        "bwrap", "--unshare-user", "--unshare-pid", "--die-with-parent",
        "--ro-bind", "/", "/", *opened, *covers, "--proc", "/proc", "--dev", "/dev",
        "--", *argv,
    ]  # fmt: skip


@functools.cache
def confinement_problem() -> str | None:
    """Why harnesses cannot be confined here (checked once per process); None when they can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (make sandbox-packages)"
    try:
        probe = subprocess.run(confined(["true"], []), capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start: {exc}"
    if probe.returncode != 0:
        return f"bubblewrap cannot create user and PID namespaces here: {probe.stderr.strip() or probe.returncode}"
    return None
