"""Verifier of a desktop task; copied verbatim into each task folder as ``verify.py``.

Standard library only: it runs as ``python3 {task_dir}/verify.py`` with the workspace as
its working directory and the rollout's ``DISPLAY`` (the runner gives the verifier the
desktop before tearing it down). It reads the expectations from ``goal.json`` beside it:

    {"files": {"hello.txt": "hello desktop"},          # path in the workspace: its text
     "windows": {"build-finished": true, "OpenForge Terminal": false}}   # shown or not

File texts are compared without surrounding whitespace (``echo`` adds a newline); window
titles exactly, among the visible windows. Exit 0: every expectation met; 1: some not
(each printed); 2: it could not judge (no goal, no display, no xdotool).
"""

import json
import os
import subprocess
import sys
from pathlib import Path


def cannot_judge(message):
    # Exit 2, not 1: the runner reads 1 as "failed" and 2 as a broken verifier (no reward).
    print(f"verify.py: {message}", file=sys.stderr)
    sys.exit(2)


def file_problems(expected_files, workspace):
    problems = []
    for name, expected in expected_files.items():
        path = workspace / name
        try:
            found = path.read_text(errors="replace")
        except FileNotFoundError:
            problems.append(f"file {name}: missing")
            continue
        except OSError as exc:
            problems.append(f"file {name}: unreadable ({exc.strerror})")
            continue
        if found.strip() != expected.strip():
            problems.append(f"file {name}: expected {expected.strip()!r}, found {found.strip()[:200]!r}")
    return problems


def window_titles():
    if not os.environ.get("DISPLAY"):
        cannot_judge("DISPLAY is not set: the verifier of a desktop task needs the rollout's display")
    try:
        ids = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "."],
                             capture_output=True, text=True, timeout=10).stdout.split()
        return {subprocess.run(["xdotool", "getwindowname", wid], capture_output=True, text=True,
                               timeout=10).stdout.strip() for wid in ids}
    except (OSError, subprocess.TimeoutExpired) as exc:
        cannot_judge(f"cannot list the windows with xdotool: {exc}")


def window_problems(expected_windows):
    titles = window_titles()
    problems = []
    for title, shown in expected_windows.items():
        if shown and title not in titles:
            problems.append(f"window {title!r}: not shown (shown: {sorted(t for t in titles if t)})")
        elif not shown and title in titles:
            problems.append(f"window {title!r}: still shown")
    return problems


def main():
    goal_file = Path(__file__).with_name("goal.json")
    try:
        goal = json.loads(goal_file.read_text())
    except (OSError, ValueError) as exc:
        cannot_judge(f"cannot read {goal_file}: {exc}")
    problems = file_problems(goal.get("files", {}), Path.cwd())
    if goal.get("windows"):
        problems += window_problems(goal["windows"])
    for problem in problems:
        print(problem)
    if problems:
        print(json.dumps({"reward": 0.0}))
        return 1
    print("every expectation met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
