"""On-policy distillation through the steps: distill scores the iteration's batch with a served
teacher, train adds the teacher's term to that very batch and commits the next checkpoint.

The rollouts, the teacher and its engine are test_distillation.py's: the served model samples
the rollouts, so here it is both the policy (checkpoint 0) and the teacher.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from components.core.checkpoints import commit_checkpoint
from components.core.config import ExperimentConfig
from components.core.outcome import RewardRecord
from components.core.storage import LocalStore, RunLayout
from components.trainer.batch import build_batch
from components.trainer.distill_step import score_with_teacher
from components.trainer.distillation import DistillationError
from components.trainer.step import train_iteration
from tests._servers import EngineServer

# Module fixtures shared with the distillation module's own tests (one engine each module).
from tests.components.trainer.test_distillation import (  # noqa: F401
    ALGORITHM,
    SELF_AGREEMENT,
    Rollouts,
    engine_rollouts,
    preferred_token,
    student_dir,
    student_rollouts,
    teacher_dir,
    teacher_engine,
)


def _config(tmp_path: Path, teacher_dir: Path, engine: EngineServer, **distillation) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "od",
            "tasks": {"source": str(tmp_path / "tasks")},
            "model": {"path": str(teacher_dir)},
            "engine": {"vllm": {"served_model_name": engine.model}},
            "storage": {"uri": f"file://{tmp_path / 'store'}"},
            "algorithm": {"learning_rate": 1e-3, "distillation": {"teacher_model": str(teacher_dir), **distillation}},
        }
    )


def _scored_iteration(store: LocalStore, rollouts: Rollouts, records: list[RewardRecord], policy: Path) -> None:
    """What serve, the rollouts and score leave for iteration 0: checkpoint 0, trajectories, rewards."""
    layout = RunLayout("od")
    for rollout_id, session in rollouts.calls.items():
        store.put_bytes(layout.trajectory(0, rollout_id), "".join(c.model_dump_json() + "\n" for c in session).encode())
    rewards = {"records": [r.model_dump(mode="json") for r in records], "metrics": {}}
    store.put_bytes(layout.rewards(0), json.dumps(rewards).encode())
    commit_checkpoint(store, layout, 0, policy)


def _address(engine: EngineServer) -> str:
    return urlparse(engine.url).netloc


def test_distill_scores_the_batch_and_train_adds_the_teacher_term_to_it(
    engine_rollouts: Rollouts, teacher_engine: EngineServer, teacher_dir: Path, tmp_path: Path
) -> None:
    config = _config(tmp_path, teacher_dir, teacher_engine, weight=0.5)
    store, layout = LocalStore(tmp_path / "store"), RunLayout("od")
    _scored_iteration(store, engine_rollouts, engine_rollouts.records, teacher_dir)

    counts = score_with_teacher(config, 0, store, _address(teacher_engine))
    assert counts == {"rows": 4, "sampled_tokens": 4 * 12}  # each rollout's two calls merge into one row
    assert score_with_teacher(config, 0, store, "127.0.0.1:1") == counts  # stored: the teacher is not asked again

    metrics = train_iteration(config, 0, store)

    # The teacher is the policy itself: its term is ~0, so the update is the verifier's alone.
    assert abs(metrics["train/distill/reverse_kl"]) < SELF_AGREEMENT
    assert metrics["batch/teacher_scored_tokens"] == 48 and metrics["train/grad_norm"] > 0
    assert store.exists(layout.checkpoint_marker(1))
    from verl import DataProto

    stored = DataProto.load_from_disk(store.root_path / layout.batch(0))
    assert "teacher_log_probs" in stored.batch.keys()  # the stored batch is what was trained


def test_train_refuses_scores_of_another_batch_and_a_missing_distill(
    engine_rollouts: Rollouts, teacher_engine: EngineServer, teacher_dir: Path, tmp_path: Path
) -> None:
    config = _config(tmp_path, teacher_dir, teacher_engine)
    store, layout = LocalStore(tmp_path / "store"), RunLayout("od")
    _scored_iteration(store, engine_rollouts, engine_rollouts.records, teacher_dir)
    with pytest.raises(DistillationError, match="run it first"):
        train_iteration(config, 0, store)

    score_with_teacher(config, 0, store, _address(teacher_engine))
    # The rewards change after distill ran (a rescore that finds one rollout unusable): a row less.
    changed = [r.model_copy(update={"usable": False}) if r.rollout_id == "t-s0" else r for r in engine_rollouts.records]
    store.put_bytes(layout.rewards(0), json.dumps({"records": [r.model_dump(mode="json") for r in changed]}).encode())
    with pytest.raises(DistillationError, match="of other rows than this batch"):
        train_iteration(config, 0, store)
    assert not store.exists(layout.checkpoint_marker(1))


def test_pure_distillation_trains_groups_whose_rewards_are_all_equal(engine_rollouts: Rollouts) -> None:
    flat = [r.model_copy(update={"reward": 1.0}) for r in engine_rollouts.records]
    pure = ALGORITHM.model_copy(update={"distillation": {"teacher_model": "t", "verifier_reward": False}})
    pure = type(ALGORITHM).model_validate(pure.model_dump())

    _, grpo = build_batch(engine_rollouts.calls, flat, ALGORITHM, pad_token_id=engine_rollouts.pad)
    data, distilling = build_batch(engine_rollouts.calls, flat, pure, pad_token_id=engine_rollouts.pad)

    assert (grpo.rows, grpo.skipped_groups) == (0, 1)  # no reward signal: GRPO trains nothing
    assert (distilling.rows, distilling.skipped_groups) == (4, 0)  # the teacher's signal is per token
    assert float(data.batch["advantages"].abs().max()) == 0  # until the teacher's term is added
