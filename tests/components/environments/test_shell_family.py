"""The cold-start shell tasks: written from a seed, solved by their reference, failed by their slip,
and a held-out set that shares no command with the training set."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.environments.shell_family import KINDS, check_no_overlap, write_shell_family
from components.rollout.tasks import load_task_set

SHIPPED = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "cold-start"


def _same_tree(a: Path, b: Path) -> bool:
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.diff_files or compared.funny_files:
        return False
    return all(_same_tree(a / sub, b / sub) for sub in compared.common_dirs)


def test_the_shipped_sets_are_what_the_command_writes(tmp_path: Path) -> None:
    write_shell_family(tmp_path / "train", 20, seed=0)
    write_shell_family(tmp_path / "held-out", 10, seed=1, prefix="held")
    for name in ("train", "held-out"):
        shipped = {p.name for p in (SHIPPED / name).iterdir()}
        assert shipped == {p.name for p in (tmp_path / name).iterdir()}
        assert all(_same_tree(SHIPPED / name / task, tmp_path / name / task) for task in shipped), name


def _verdict(task_dir: Path, command: str, scratch: Path) -> int:
    workspace = scratch / task_dir.name
    shutil.copytree(task_dir / "workspace", workspace)
    subprocess.run(["bash", "-c", command], cwd=workspace, check=True)
    env = {**os.environ, "OPENFORGE_TASK_DIR": str(task_dir)}
    return subprocess.run([sys.executable, str(task_dir / "verify.py")], cwd=workspace, env=env, capture_output=True).returncode


@pytest.mark.parametrize("name", ["train", "held-out"])
def test_every_reference_passes_its_verifier_and_the_kinds_slip_fails_it(name: str, tmp_path: Path) -> None:
    tasks = load_task_set(SHIPPED / name)
    assert {task.id.split("-", 2)[2] for task in tasks} == set(KINDS)
    # The file names and sizes differ: the command must be read off the prompt.
    assert len({task.prompt for task in tasks}) == len(tasks)
    for task in tasks:
        right, wrong = (candidate.tool_calls[0].shell for candidate in task.choices[0])
        assert task.reference[0].tool_calls[0].shell == right
        assert _verdict(task.task_dir, right, tmp_path / "right") == 0, task.id
        assert _verdict(task.task_dir, wrong, tmp_path / "wrong") == 1, task.id


def test_a_held_out_set_that_repeats_a_training_command_is_refused(tmp_path: Path) -> None:
    check_no_overlap(SHIPPED / "train", SHIPPED / "held-out")
    write_shell_family(tmp_path / "again", 5, seed=0, prefix="held")  # the training seed: the same files
    with pytest.raises(ValueError, match=r"held-out tasks \['held-00-word-count'.* draw the held-out set with another seed"):
        check_no_overlap(SHIPPED / "train", tmp_path / "again")
