"""Which checkpoint the engine says it serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.checkpoints import CHECKPOINT_INFO
from components.engine import EngineStartError, policy_version_of


def test_manifest_names_the_policy_version(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_INFO).write_text('{"policy_version": "iter-0003", "step": 3}')
    assert policy_version_of(tmp_path) == "iter-0003"


def test_without_a_manifest_the_directory_name_is_the_version(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt-7"
    checkpoint.mkdir()
    assert policy_version_of(checkpoint) == "ckpt-7"


def test_a_broken_manifest_stops_the_engine_from_starting(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_INFO).write_text("[1, 2")
    with pytest.raises(EngineStartError, match=CHECKPOINT_INFO):
        policy_version_of(tmp_path)
