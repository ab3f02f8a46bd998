"""The shipped desktop tasks (examples/tasks/desktop) on real Xvfb, openbox and xdotool: each
one's set-up opens its windows, its verifier fails on the untouched desktop and on a wrong
result, and passes once the right actions are taken (the actions an agent would take)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.environments import DesktopEnvironment, EnvironmentSetupError
from components.environments.desktop_tasks import (
    DesktopTaskError,
    DesktopTaskSpec,
    load_desktop_spec,
    start_desktop,
)

REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / "examples" / "tasks" / "desktop"
VERIFIER = REPO / "components" / "environments" / "desktop_verify.py"


def _type_in(desktop: DesktopEnvironment, x: int, y: int, text: str) -> None:
    desktop.click(x, y)
    desktop.type_text(text)


def _settle(desktop: DesktopEnvironment, check: Callable[[], bool]) -> None:
    # The shell runs what was typed (or the window closes) a moment after the keys land.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not check():
        time.sleep(0.05)


# task id -> (the right actions, a wrong result), each taking (desktop, workspace).
def _echo(text: str) -> Callable[[DesktopEnvironment, Path], None]:
    def act(desktop: DesktopEnvironment, workspace: Path) -> None:
        _type_in(desktop, 340, 250, f"echo {text} > hello.txt\n")
        _settle(desktop, lambda: (workspace / "hello.txt").exists())

    return act


def _title(title: str) -> Callable[[DesktopEnvironment, Path], None]:
    def act(desktop: DesktopEnvironment, workspace: Path) -> None:
        _type_in(desktop, 340, 250, f"printf '\\033]0;{title}\\007'\n")
        _settle(desktop, lambda: title in desktop.window_names())

    return act


def _press(x: int, label: str) -> Callable[[DesktopEnvironment, Path], None]:
    def act(desktop: DesktopEnvironment, workspace: Path) -> None:
        desktop.click(x, 358)  # the dialog sits at +400+300; Cancel at x 430, Approve at x 490
        _settle(desktop, lambda: (workspace / ".dialog-choice").read_text().strip() == label)

    return act


def _exit_in(x: int, y: int, title: str) -> Callable[[DesktopEnvironment, Path], None]:
    def act(desktop: DesktopEnvironment, workspace: Path) -> None:
        _type_in(desktop, x, y, "exit\n")
        _settle(desktop, lambda: title not in desktop.window_names())

    return act


CASES = {
    "desktop-terminal-file": (_echo("hello desktop"), _echo("hello world")),
    "desktop-window-title": (_title("build-finished"), _title("build-started")),
    "desktop-dialog-approve": (_press(490, "Approve"), _press(430, "Cancel")),
    "desktop-close-window": (_exit_in(900, 500, "Scratch"), _exit_in(300, 200, "Main")),
}


def _verify(task: Path, workspace: Path, desktop: DesktopEnvironment) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["python3", str(task / "verify.py")], cwd=workspace, env={**os.environ, **desktop.env()},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


@pytest.fixture
def open_task(desktop_ready: None, tmp_path: Path) -> Iterator[Callable[[str], tuple[DesktopEnvironment, Path]]]:
    opened: list[DesktopEnvironment] = []

    def open_(task_id: str) -> tuple[DesktopEnvironment, Path]:
        workspace = tmp_path / f"{task_id}-{len(opened)}"
        workspace.mkdir()
        desktop = start_desktop(load_desktop_spec(TASKS / task_id), workspace=workspace,
                                task_dir=TASKS / task_id, env=dict(os.environ))  # fmt: skip
        opened.append(desktop)
        return desktop, workspace

    yield open_
    for desktop in opened:
        desktop.teardown()


def test_every_shipped_desktop_task_is_covered_and_verified_by_the_shared_verifier() -> None:
    assert sorted(p.name for p in TASKS.iterdir() if p.is_dir()) == sorted(CASES)
    for task in TASKS.iterdir():
        assert (task / "verify.py").read_text() == VERIFIER.read_text(), f"{task}/verify.py differs from {VERIFIER}"


@pytest.mark.parametrize("task_id", sorted(CASES))
def test_desktop_task_verifier_passes_only_when_done_right(task_id: str, open_task) -> None:
    right, wrong = CASES[task_id]
    task = TASKS / task_id
    for act, expected in ((None, 1), (wrong, 1), (right, 0)):
        desktop, workspace = open_task(task_id)
        if act is not None:
            act(desktop, workspace)
        result = _verify(task, workspace, desktop)
        what = "untouched" if act is None else act.__qualname__
        assert result.returncode == expected, f"{task_id} ({what}): {result.stdout}{result.stderr}"
        desktop.teardown()


def test_desktop_verifier_without_a_display_cannot_judge(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    result = subprocess.run(["python3", str(TASKS / "desktop-close-window" / "verify.py")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert result.returncode == 2 and "DISPLAY is not set" in result.stderr


def test_app_whose_window_never_appears_fails_setup_and_leaves_nothing(desktop_ready: None, tmp_path: Path) -> None:
    spec = DesktopTaskSpec(apps=[{"argv": ["sleep", "30"], "window": "never shown"}], start_timeout_s=1)
    with pytest.raises(EnvironmentSetupError, match="no window titled 'never shown' appeared within 1s"):
        start_desktop(spec, workspace=tmp_path, task_dir=None, env=dict(os.environ))
    spec = DesktopTaskSpec(apps=[{"argv": ["false"], "window": "never shown"}])
    with pytest.raises(EnvironmentSetupError, match="exited with code 1 before its window"):
        start_desktop(spec, workspace=tmp_path, task_dir=None, env=dict(os.environ))


def test_apps_run_in_the_workspace_with_the_given_environment(desktop_ready: None, tmp_path: Path) -> None:
    spec = DesktopTaskSpec(apps=[{"argv": ["sh", "-c", "echo $OPENFORGE_PROBE $DISPLAY > seen.txt; cp {task_dir}/x ."]}])
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "x").write_text("from the task")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    desktop = start_desktop(spec, workspace=workspace, task_dir=tmp_path / "task", env={"PATH": os.environ["PATH"],
                            "OPENFORGE_PROBE": "harness-env"})  # fmt: skip
    try:
        _settle(desktop, lambda: (workspace / "x").exists())
        assert (workspace / "seen.txt").read_text().split() == ["harness-env", desktop.display]
    finally:
        desktop.teardown()


def test_bad_desktop_yaml_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "desktop.yaml").write_text("apps:\n  - command: [xterm]\n")
    with pytest.raises(DesktopTaskError, match=r"desktop\.yaml: .*apps\.0\.argv"):
        load_desktop_spec(tmp_path)
    assert load_desktop_spec(tmp_path / "nothing-here") is None
