"""One local workflow of a kind per experiment at a time: a second `openforge run` (or the same
evaluation, or `openforge sft`) of one experiment in one folder is refused before any step starts.

Two at once would run each other's steps in one executor folder (a bench session saw one crash
with FileNotFoundError in the other's pod folders) and race on the store's iteration state.
The lock is the kernel's (``flock``): a killed run holds nothing, so its rerun resumes at once.
It guards one working folder; runs of one experiment from two folders into one store are not
seen (on a cluster the workflow's experiment mutex does that)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.run import RunError


class WorkflowBusy(RunError):
    """Another local workflow of the same kind and experiment holds the folder."""


@contextmanager
def workflow_lock(folder: Path, workflow: str) -> Iterator[Path]:
    """Hold ``folder/<workflow>.lock`` for the block; WorkflowBusy, naming the holder, if another process has it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{workflow}.lock"
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "a process that wrote nothing yet"
            raise WorkflowBusy(
                f"{workflow} of this experiment is already running from {folder.parent.parent} ({holder}; lock {path}): "
                "wait for it to end or stop it, then run again (it resumes from the store), or give this one another `name`"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        handle.flush()
        try:
            yield path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
