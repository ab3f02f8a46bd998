"""An attempt's folder: one fixed path where /tmp is the container's own, so a task's GRPO
siblings show the harness the same working directory (and the engine the same prompt);
a folder of its own where another rollout holds the fixed one on a shared /tmp."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from components.rollout._attempt_dir import FIXED_NAME, attempt_dir


@pytest.fixture(autouse=True)
def _own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def test_every_attempt_in_a_private_tmp_gets_the_same_path_and_leaves_nothing(tmp_path: Path) -> None:
    seen = []
    for rollout in ("greeting-s0", "greeting-s1"):
        with attempt_dir(rollout) as folder:
            (folder / "workspace").mkdir()
            seen.append(folder)
    assert seen == [tmp_path / FIXED_NAME] * 2
    assert list(tmp_path.iterdir()) == []


def test_a_shared_tmp_gives_the_second_rollout_a_folder_of_its_own(tmp_path: Path) -> None:
    with attempt_dir("greeting-s0") as first, attempt_dir("greeting-s1") as second:
        assert first == tmp_path / FIXED_NAME
        assert second.parent == tmp_path and second.name.startswith("openforge-greeting-s1-")
        (second / "file").write_text("kept apart")
        assert not (first / "file").exists()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_left_by_a_killed_rollout_is_never_reused(tmp_path: Path) -> None:
    (tmp_path / FIXED_NAME).mkdir()
    (tmp_path / FIXED_NAME / "old").write_text("from a rollout that was killed")
    with attempt_dir("greeting-s0") as folder:
        assert folder != tmp_path / FIXED_NAME and not (folder / "old").exists()
    assert (tmp_path / FIXED_NAME / "old").exists()  # not ours to remove
