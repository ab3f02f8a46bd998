"""The desktop side of a rollout: a fresh X display per attempt, with the task's apps open.

A desktop task (``Task.desktop``) or a harness that drives a desktop (``needs_desktop``,
cua-agent) gets, for each attempt, its own Xvfb display with openbox and the apps of the
task's ``desktop.yaml`` started in the workspace with the harness's environment; the
harness starts once their windows are shown. The harness and the verifier (window
checks) get ``DISPLAY`` and ``XDG_SESSION_TYPE=x11``; the display is torn down whatever
happens. The step limit is the runner's, as for browser agents (``_gui.CallCounter``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from components.environments import DesktopEnvironment
from components.environments.desktop_tasks import start_desktop
from components.rollout._record import Record
from components.rollout.harnesses import HarnessAdapter
from components.rollout.tasks import Task


def needs_desktop(task: Task, adapter: HarnessAdapter) -> bool:
    return task.desktop is not None or adapter.needs_desktop


@contextmanager
def open_desktop(
    task: Task, adapter: HarnessAdapter, record: Record, workspace: Path, env: dict[str, str]
) -> Iterator[DesktopEnvironment | None]:
    """The display for one attempt (None for a task and harness that need none).

    ``EnvironmentSetupError`` (no Xvfb, an app whose window never showed) propagates: the
    runner records it as an infrastructure error naming the fix. A failed teardown is
    noted in the outcome instead: the verdict already stands.
    """
    if not needs_desktop(task, adapter):
        yield None
        return
    desktop = start_desktop(task.desktop, workspace=workspace, task_dir=task.task_dir, env=env)
    try:
        yield desktop
    finally:
        try:
            desktop.teardown()
        except RuntimeError as exc:
            record.notes.append(f"desktop teardown left processes behind: {exc}")
