"""GUI iterations with the tiny vision-language policy, run once and shared (the
``gui_vl_run`` fixture, tests/e2e/conftest.py): test_iteration_gui_vision.py checks what
they trained, test_viewer_browser.py browses them.

Under xdist each worker is a session of its own; the iteration still runs once: the first
worker to ask runs it under a file lock in the workers' shared temp folder, and the others
find it done (``logged.json``, written last).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import require_harness

from components.core.config import ExperimentConfig, load_config

REPO = Path(__file__).resolve().parents[2]
# (harness, task, the fixture its packages need, model calls per rollout). browser-use's
# random answers never parse: one call. cua-agent plays the task's candidate turns (choice
# mode, examples/desktop.yaml) and needs all three to reach its verifier.
# The desktop run trains the language model only (trainer.freeze_vision_tower), the web run all of it.
FROZEN_TOWER = {"web": False, "desktop": True}
GUI = {
    "web": ("browser-use", REPO / "examples" / "tasks" / "web" / "web-form-submit-1", "chromium_ready", 1),
    "desktop": ("cua-agent", REPO / "examples" / "tasks" / "desktop" / "desktop-terminal-file", "desktop_ready", 4),
}


@dataclass(frozen=True)
class GuiRun:
    config: ExperimentConfig
    work: Path  # tasks, store, mlflow.db, the run's work folder
    logged: dict[int, dict[str, float]]  # what run_experiment returned: each iteration's metrics


def _config(example_name: str, work: Path) -> ExperimentConfig:
    harness, _, _, max_turns = GUI[example_name]
    example = load_config(REPO / "examples" / f"{example_name}.yaml")
    return example.model_copy(
        update={
            "name": f"{example_name}-vl",
            "model": example.model.model_copy(update={"tiny_vision": True}),
            "tasks": example.tasks.model_copy(update={"source": str(work / "tasks"), "per_iteration": 1}),
            "harness": example.harness.model_copy(update={"max_turns": max_turns}),
            "trainer": example.trainer.model_copy(update={"freeze_vision_tower": FROZEN_TOWER[example_name]}),
            "storage": example.storage.model_copy(update={"uri": f"file://{work / 'store'}"}),
            "tracking": example.tracking.model_copy(update={"uri": f"sqlite:///{work / 'mlflow.db'}"}),
        }
    )


def gui_run(example_name: str, request: pytest.FixtureRequest, shared: Path) -> GuiRun:
    """The one-iteration GUI run of ``examples/<example_name>.yaml`` under ``shared`` (its packages
    and harness installed, or the test skipped, saying why), made by the first caller."""
    from pipelines.run import run_experiment
    from tests.e2e._noisy_reward import noisy_task
    from tests.e2e.test_iteration_web import RUNTIME

    harness, task, ready, _ = GUI[example_name]
    request.getfixturevalue(ready)  # Chromium or the X desktop packages, installed or skipped
    require_harness(harness)
    work = shared / f"gui-vl-{example_name}"
    work.mkdir(exist_ok=True)
    config, done = _config(example_name, work), work / "logged.json"
    with open(work / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, however the run ends
        if not done.exists():
            if (work / "tasks").exists():  # a run that failed midway: start it over
                _clear(work)
            noisy_task(work / "tasks", task)
            console = Console(file=io.StringIO(), width=160)
            logged = run_experiment(config, console=console, workdir=work / ".openforge", runtime=RUNTIME)
            done.write_text(json.dumps(logged))
    logged = {int(k): v for k, v in json.loads(done.read_text()).items()}
    return GuiRun(config, work, logged)


def _clear(work: Path) -> None:
    for child in work.iterdir():
        if child.name != ".lock":
            shutil.rmtree(child) if child.is_dir() else os.unlink(child)
