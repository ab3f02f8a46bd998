"""The shipped MiniWoB suite (examples/tasks/miniwob): ordinary web task folders, exactly as
`openforge tasks miniwob` writes them from the pages' own utterances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.environments.miniwob_tasks import SUITE_SEEDS, SUITE_TASKS
from components.rollout.tasks import load_task_set
from pipelines.cli import app

MINIWOB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "miniwob"


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_suite_loads_as_web_tasks_whose_prompt_is_the_pages_utterance() -> None:
    tasks = load_task_set(MINIWOB_TASKS)
    assert {(t.web.goal, t.web.seed) for t in tasks} == {(n, s) for n in SUITE_TASKS for s in range(SUITE_SEEDS)}
    for task in tasks:
        assert task.web.app == "miniwob" and task.id == f"miniwob-{task.web.goal}-{task.web.seed}"
        utterance = json.loads((task.task_dir / "goal.json").read_text())["state"]["result"]["utterance"]
        assert task.prompt == f"The page {{web_url}} is open in the browser. {utterance}"


@pytest.mark.slow
def test_checked_in_suite_is_what_the_generator_writes(chromium_ready: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "miniwob", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert _files(tmp_path) == _files(MINIWOB_TASKS), "examples/tasks/miniwob is stale: rerun `openforge tasks miniwob`"


def test_generator_refuses_an_unknown_task(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["tasks", "miniwob", "--out", str(tmp_path), "--tasks", "click-button,clik-link"])
    assert result.exit_code == 2 and "clik-link" in result.output
    assert not list(tmp_path.iterdir())
