"""OSWorld task JSON as desktop tasks: the shipped examples become tasks the loader accepts, what
cannot run offline is refused when the task is written (naming what is supported), the verifier
scores like OSWorld's metrics, and a task's set-up runs on a real local desktop.

A rollout of the first example through the runner is in tests/components/rollout/test_runner_suites.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.components.environments._verify import run_verifier
from tests.components.environments.suites._examples import SOURCES, write_example

from components.environments import EnvironmentSetupError
from components.environments.desktop_tasks import DesktopTaskError, load_desktop_spec, start_desktop
from components.environments.suites.common import SuiteError
from components.environments.suites.osworld import osworld_folders
from components.rollout.tasks import load_task_set

REPO = Path(__file__).resolve().parents[4]
FIX_TYPO = "osworld-0f6c3b1e-7d2a-4e5b-9c8d-1a2b3c4d5e6f"
CLEAN_LOGS = "osworld-8a9b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
SOURCE = SOURCES["osworld"] / "os" / "0f6c3b1e-7d2a-4e5b-9c8d-1a2b3c4d5e6f.json"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("osworld")
    write_example("osworld", out)
    return out


def test_shipped_examples_become_desktop_tasks_the_task_loader_accepts(tasks: Path) -> None:
    fix, clean = load_task_set(tasks)

    assert (fix.id, clean.id) == (FIX_TYPO, CLEAN_LOGS)
    # /home/user is the workspace: the download is a workspace file, the instruction says ./
    assert (fix.workspace_dir / "draft.txt").read_text() == "helo wrld\n"
    assert fix.prompt.startswith("The file ./draft.txt has typos.") and "/home/user" not in fix.prompt
    assert (fix.task_dir / "expected" / "draft_gold.txt").read_text() == "hello world\n"  # outside the workspace
    assert (fix.desktop.width, fix.desktop.height) == (1920, 1080)
    assert [(a.argv[0], a.window, a.wait_exit) for a in fix.desktop.apps] == [("xterm", "Terminal", False)]
    # execute: a set-up command run to its end, with the workspace for /home/user; launch, its window; sleep
    setup, terminal, sleep = clean.desktop.apps
    assert setup.wait_exit and "pathlib.Path('{workspace}/logs')" in setup.argv[2]
    assert (terminal.argv, terminal.window) == (["sh", "-c", "xterm -T Terminal -geometry 100x30+40+40"], "Terminal")
    assert (sleep.argv, sleep.wait_exit) == (["sleep", "0.5"], True)
    assert clean.workspace is None
    goal = json.loads((clean.task_dir / "goal.json").read_text())
    assert goal["conj"] == "and" and [c["func"] for c in goal["checks"]] == ["check_include_exclude", "exact_match"]
    assert goal["checks"][0]["result"] == {"command": ["ls", "{workspace}/logs"]}


def test_python_m_writes_the_same_folders_as_openforge_tasks(tasks: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "components.environments", "tasks", "osworld", str(SOURCES["osworld"]), str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(tmp_path / FIX_TYPO), str(tmp_path / CLEAN_LOGS)]
    for name in (FIX_TYPO, CLEAN_LOGS):
        files = sorted(p.relative_to(tmp_path) for p in (tmp_path / name).rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(tasks) for p in (tasks / name).rglob("*") if p.is_file())
        assert all((tmp_path / f).read_bytes() == (tasks / f).read_bytes() for f in files)


def _set(path: tuple, value: object) -> Callable[[dict], None]:
    def edit(task: dict) -> None:
        target = task
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


SUPPORTED = "supported: exact_match, compare_text_file, check_include_exclude"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set(("evaluator", "func"), "compare_table"), rf"evaluator.func: 'compare_table' is not supported offline .*{SUPPORTED}"),
        (_set(("evaluator", "func"), "infeasible"), rf"evaluator.func: 'infeasible' .*declare the task infeasible.*{SUPPORTED}"),
        (_set(("evaluator", "func"), ["exact_match", "is_expected_tabs"]), rf"evaluator.func: 'is_expected_tabs' is not supported.*{SUPPORTED}"),
        (
            _set(("config", 0), {"type": "open", "parameters": {"path": "/home/user/draft.txt"}}),
            r"config\[0\]: step type 'open' cannot run offline \(it opens a file with the VM's default application; "
            r".*supported: download, execute, command, launch, activate_window, sleep",
        ),
        (
            _set(("config", 0, "parameters", "files", 0, "url"), "https://drive.example.com/draft.txt"),
            r"config\[0\].parameters: https://drive.example.com/draft.txt is on the network, which rollouts cannot reach",
        ),
        (
            _set(("config", 0, "parameters", "files", 0, "path"), "/etc/draft.txt"),
            r"config\[0\].parameters: /etc/draft.txt is outside /home/user",
        ),
        (
            _set(("config", 1, "parameters", "command"), ["openforge-no-such-editor"]),
            r"config\[1\].parameters: openforge-no-such-editor is not installed on this machine",
        ),
        (_set(("config", 1), {"type": "sleep", "parameters": {"seconds": 1}}), r"config\[2\]: activate_window must follow the launch"),
        (_set(("config", 1, "parameters", "cmd"), "x"), r"config\[1\].parameters: cmd: unknown field \(misspelled\? fields: command, shell"),
        (_set(("config", 0), {"parameters": {}}), r"config\[0\]: type: required field is missing"),
        (_set(("evaluator", "postconfig"), [{"type": "sleep"}]), r"evaluator.postconfig: actions in the VM before judging"),
        (
            _set(("evaluator", "expected", "path"), "https://drive.example.com/gold.txt"),
            r"evaluator check 0 \(compare_text_file\): expected.path: https://drive.example.com/gold.txt is on the network",
        ),
        (_set(("evaluator", "options"), {"ignore_order": True}), r"evaluator check 0 \(compare_text_file\): options: ignore_order: unknown field"),
        (
            _set(("evaluator", "result"), {"type": "vm_screen_size"}),
            r"evaluator: result.*'vm_screen_size'.*does not match any of the expected tags: 'vm_file', 'vm_command_line'",
        ),
        (
            _set(("evaluator", "func"), ["compare_text_file", "exact_match"]),
            r"evaluator: a list of funcs needs lists of result, expected and options of its length",
        ),
        (_set(("instruction",), ""), r"instruction: String should have at least 1 character"),
    ],
)
def test_what_cannot_run_offline_is_refused_naming_what_is_supported(
    tmp_path: Path, edit: Callable[[dict], None], message: str
) -> None:
    source = tmp_path / "os" / SOURCE.name
    shutil.copytree(SOURCE.parent, source.parent)
    task = json.loads(source.read_text())
    edit(task)
    source.write_text(json.dumps(task))

    with pytest.raises(SuiteError, match=f"{source}: {message}"):
        osworld_folders(tmp_path, "cmd")


def _workspace(tasks: Path, name: str, tmp_path: Path) -> Path:
    """A fresh workspace as the runner makes one: a copy of the task's workspace folder."""
    source = tasks / name / "workspace"
    return Path(shutil.copytree(source, tmp_path / "ws")) if source.is_dir() else tmp_path


@pytest.mark.parametrize(
    ("text", "passed"),
    [
        ("hello world\n", True),
        ("  hello\tworld  ", True),  # ignore_blanks, as OSWorld's compare_text_file
        ("Hello world\n", False),  # the case counts: ignore_case is off
        ("helo wrld\n", False),  # untouched
        (None, False),  # deleted
    ],
)
def test_compare_text_file_scores_like_osworlds_metric(tasks: Path, tmp_path: Path, text: str | None, passed: bool) -> None:
    workspace = _workspace(tasks, FIX_TYPO, tmp_path)
    if text is None:
        (workspace / "draft.txt").unlink()
    else:
        (workspace / "draft.txt").write_text(text)

    assert run_verifier(tasks / FIX_TYPO, workspace, {}) == (passed, float(passed))


def test_the_set_up_runs_on_a_local_desktop_and_the_verifier_judges_the_result(
    desktop_ready: None, tasks: Path, tmp_path: Path
) -> None:
    task = load_task_set(tasks)[1]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    desktop = start_desktop(task.desktop, workspace=workspace, task_dir=task.task_dir, env={"PATH": "/usr/bin:/bin"})
    try:
        # The execute step ran to its end, with /home/user as the workspace; the terminal is shown.
        assert sorted(p.name for p in (workspace / "logs").iterdir()) == ["app.log", "cache.tmp", "db.log", "upload.tmp"]
        assert "Terminal" in desktop.window_names()
        for name in ("cache.tmp", "upload.tmp"):
            (workspace / "logs" / name).unlink()
        (workspace / "count.txt").write_text("2\n")
        assert run_verifier(task.task_dir, workspace, desktop.env()) == (True, 1.0)
        (workspace / "count.txt").write_text("4\n")  # exact_match fails: conj "and" fails the task
        assert run_verifier(task.task_dir, workspace, desktop.env()) == (False, 0.0)
        (workspace / "count.txt").write_text("2\n")
        (workspace / "logs" / "left.tmp").write_text("")  # check_include_exclude fails
        assert run_verifier(task.task_dir, workspace, desktop.env()) == (False, 0.0)
    finally:
        desktop.teardown()


def test_a_set_up_command_that_fails_stops_the_desktop_naming_it(desktop_ready: None, tmp_path: Path) -> None:
    (tmp_path / "desktop.yaml").write_text('apps:\n  - argv: ["sh", "-c", "exit 3"]\n    wait_exit: true\n')
    with pytest.raises(EnvironmentSetupError, match=r"set-up command sh exited with code 3; check its argv in desktop.yaml"):
        start_desktop(load_desktop_spec(tmp_path), workspace=tmp_path, task_dir=tmp_path, env={"PATH": "/usr/bin:/bin"})


def test_a_set_up_command_has_no_window(tmp_path: Path) -> None:
    (tmp_path / "desktop.yaml").write_text('apps:\n  - argv: ["true"]\n    wait_exit: true\n    window: Never\n')
    with pytest.raises(DesktopTaskError, match=r"apps.0: an entry with wait_exit: true opens no window to wait for"):
        load_desktop_spec(tmp_path)
