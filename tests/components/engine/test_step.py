"""The serve step's policy: a run with an `sft:` section starts RL from `openforge sft`'s checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.checkpoints import committed_versions
from components.core.config import ExperimentConfig
from components.core.storage import LocalStore, RunLayout
from components.engine.step import prepare_policy


def _config() -> ExperimentConfig:
    return ExperimentConfig.model_validate({"name": "cold", "tasks": {"source": "x"}, "sft": {"recordings": "cold"}})


def test_a_run_with_an_sft_section_starts_from_the_committed_fine_tuned_policy(tmp_path: Path) -> None:
    store, layout = LocalStore(tmp_path / "store"), RunLayout("cold")
    with pytest.raises(FileNotFoundError, match="run `openforge sft CONFIG` first"):
        prepare_policy(_config(), 0, store, tmp_path / "none")

    store.put_bytes(f"{layout.sft_checkpoint()}/config.json", b'{"fine": "tuned"}')
    store.put_bytes(layout.sft_marker(), b"")
    version = prepare_policy(_config(), 0, store, tmp_path / "policy")

    assert version == 0 and committed_versions(store, layout) == [0]
    assert json.loads(store.get_bytes(f"{layout.checkpoint(0)}/config.json")) == {"fine": "tuned"}
    assert not (tmp_path / "policy" / "COMMITTED").exists()
    # Later iterations serve the run's own checkpoints, not the fine-tuned one again.
    store.put_bytes(f"{layout.sft_checkpoint()}/config.json", b'{"fine": "changed"}')
    prepare_policy(_config(), 1, store, tmp_path / "again")
    assert json.loads((tmp_path / "again" / "config.json").read_text()) == {"fine": "tuned"}
