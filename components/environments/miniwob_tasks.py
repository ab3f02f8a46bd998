"""Task folders for MiniWoB++ episodes: ``openforge tasks miniwob --out DIR --tasks ... --seeds N``.

A MiniWoB task folder is a web task folder (``web.yaml`` with ``app: miniwob``, docs/tasks.md)
whose prompt carries the episode's utterance. MiniWoB draws its problem in the page, in
JavaScript, so the generator serves each (task, seed), opens it in Chromium exactly as a
rollout does, and reads the utterance the page reports; ``goal.json`` expects the first
ended episode to be that one, with a positive raw reward. The folders are checked in
(examples/tasks/miniwob); a test regenerates them and compares.
"""

from __future__ import annotations

import time
from pathlib import Path

from components.environments import miniwob
from components.environments.browser import BrowserEnvironment
from components.environments.web_tasks import WebTask, WebTaskSpec, folder_files, start_app, task_id
from components.environments.webapps.goal import URL_PLACEHOLDER, Goal

# The shipped suite (examples/tasks/miniwob): one-step and few-step tasks a small policy
# can learn, each at three episodes.
SUITE_TASKS = ("click-button", "click-link", "click-checkboxes", "enter-text", "focus-text")
SUITE_SEEDS = 3
_START_TIMEOUT_S = 15.0


def utterance_of(web: WebTask, browser: BrowserEnvironment) -> str:
    """Open the served task in ``browser`` and return the utterance its seeded episode reports."""
    browser.reset(web.url)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        episodes = web.state()["episodes"]
        if episodes:
            return episodes[0]["utterance"]
        time.sleep(0.05)
    raise RuntimeError(f"{web.url}: the page reported no episode start within {_START_TIMEOUT_S:.0f} s")


def goal_for(utterance: str) -> Goal:
    return Goal(
        prompt=f"The page {URL_PLACEHOLDER} is open in the browser. {utterance}",
        expect={"state": {"result": {"ended": True, "success": True, "utterance": utterance}}},
    )


def write_miniwob_tasks(root: Path, tasks: tuple[str, ...] = SUITE_TASKS, seeds: int = SUITE_SEEDS) -> list[Path]:
    """Write a folder per (task, seed), seeds 0 .. ``seeds``-1; raise ValueError for an unknown task."""
    unknown = sorted(set(tasks) - set(miniwob.task_names()))
    if unknown:
        raise ValueError(f"not MiniWoB tasks of the installed miniwob package: {', '.join(unknown)}")
    command = f"openforge tasks miniwob --tasks {','.join(tasks)} --seeds {seeds} --out DIR"
    written = []
    browser = BrowserEnvironment()
    browser.setup()
    try:
        for task in tasks:
            for seed in range(seeds):
                spec = WebTaskSpec(app=miniwob.APP, seed=seed, goal=task)
                with start_app(spec) as web:
                    goal = goal_for(utterance_of(web, browser))
                folder = root / task_id(spec)
                folder.mkdir(parents=True, exist_ok=True)
                for name, text in folder_files(spec, goal, command, "the miniwob pin or the generator").items():
                    (folder / name).write_text(text)
                written.append(folder)
    finally:
        browser.teardown()
    return written
