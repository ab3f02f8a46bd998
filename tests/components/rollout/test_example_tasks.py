"""The example task sets and configs: each verifier judges a right and a wrong answer correctly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests._choice_pages import resolved_turn

from components.core.config import load_config
from components.rollout.runner import verdict
from components.rollout.tasks import Task, load_task, load_task_set

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = REPO / "examples" / "tasks" / "quickstart"
DENSE = REPO / "examples" / "tasks" / "dense"
# What a randomly initialised tiny model answers (sampled from it), and what it learns to answer.
RANDOM_ANSWER = (
    "Ot oranmite shiposOsesfienasokuTeTe se hirinotucialNo yieldfaendiarma ad mustabubrros setanraasipic "
    "seem_at youZ downfierlo vohaisnaici riasholestspogovaill.defbevithetal rias grtewazo together deeplobupa"
)
VOWEL_RICH_ANSWER = "aurea oiseau queue " * 10


def _judge(task: Task, tmp_path: Path, answer: str, files: dict[str, str] | None = None) -> tuple[bool, float]:
    workspace = tmp_path / "workspace"
    if task.workspace_dir is not None:
        shutil.copytree(task.workspace_dir, workspace)
    else:
        workspace.mkdir(parents=True)
    for name, content in (files or {}).items():
        (workspace / name).write_text(content)
    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(answer)
    env = {**os.environ, "OPENFORGE_FINAL_ANSWER": str(answer_file), "OPENFORGE_TASK_DIR": str(task.task_dir)}
    result = subprocess.run(
        task.verifier_argv(workspace), cwd=workspace, env=env, capture_output=True, text=True, timeout=30
    )
    return verdict(result.returncode, result.stdout, result.stderr)


@pytest.mark.parametrize(
    ("task_id", "right", "files"),
    [
        ("write-hello", "", {"hello.txt": "hello\n"}),
        ("count-lines", "The file has 8 lines.", None),
        ("largest-file", "banana.txt", None),
        ("say-yes", "Yes", None),
    ],
)
def test_quickstart_verifiers_tell_right_from_wrong(task_id: str, right: str, files, tmp_path: Path) -> None:
    task = load_task(QUICKSTART / task_id)
    assert _judge(task, tmp_path / "right", right, files) == (True, 1.0)
    passed, reward = _judge(task, tmp_path / "wrong", RANDOM_ANSWER)
    assert not passed and 0.0 <= reward < 0.5


@pytest.mark.parametrize("task_id", [p.name for p in sorted(DENSE.iterdir())])
def test_dense_rewards_rise_from_random_text_to_vowel_rich_text(task_id: str, tmp_path: Path) -> None:
    task = load_task(DENSE / task_id)
    random_passed, random_reward = _judge(task, tmp_path / "random", RANDOM_ANSWER)
    vowels_passed, vowels_reward = _judge(task, tmp_path / "vowels", VOWEL_RICH_ANSWER)
    _, empty_reward = _judge(task, tmp_path / "empty", "")

    assert 0.0 <= random_reward < 0.45 < 0.6 < vowels_reward <= 1.0
    assert (random_passed, vowels_passed) == (False, True)
    assert empty_reward == 0.0


@pytest.mark.parametrize("config", ["quickstart.yaml", "learning.yaml"])
def test_example_configs_load_with_their_task_sets(config: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # task sources are relative to the repository root, as `make run` uses them
    loaded = load_config(REPO / "examples" / config)
    assert len(load_task_set(loaded.tasks.source)) >= 3


def _tasks_with_choices() -> list[Path]:
    return sorted(p.parent for p in (REPO / "examples" / "tasks").glob("*/*/task.yaml") if "choices:" in p.read_text())


@pytest.mark.parametrize("task_dir", _tasks_with_choices(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_candidates_of_a_turn_cost_the_tiny_model_the_same_tokens(task_dir: Path) -> None:
    """A random model gives each token about 1/4096: one token more makes a candidate ~e^8
    times less likely, and the choice would be decided before any learning. Counted as the
    engine plays them: a web task's element references resolved (tests/_choice_pages.py)."""
    from components.engine._chat_render import scripted_reply_ids
    from components.engine._tokenizer_build import build_tokenizer
    from components.rollout.reference_harness import SHELL_TOOL

    tokenizer = build_tokenizer()
    task = load_task(task_dir)
    for index, candidates in enumerate(task.choices):
        candidates = resolved_turn(candidates)  # as the engine plays them: page elements by number
        lengths = [
            len(scripted_reply_ids(tokenizer, [{"role": "user", "content": task.prompt}], [SHELL_TOOL], c.as_message([SHELL_TOOL])))
            for c in candidates
        ]
        assert len(set(lengths)) == 1, f"{task.id} turn {index}: candidates of {lengths} tokens"
