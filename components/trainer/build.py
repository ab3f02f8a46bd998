"""``openforge batch build`` as a plain function: files in, DataProto file out."""

from __future__ import annotations

from pathlib import Path

from components.core.config import AlgorithmConfig, ExperimentConfig
from components.trainer.batch import BatchStats, build_batch
from components.trainer.inputs import folder_trajectories, parse_rewards
from components.trainer.rows import BatchError


def build_batch_file(
    trajectories: Path, rewards: Path, out: Path, config: ExperimentConfig | None = None, pad_token_id: int = 0
) -> BatchStats:
    """Write the batch of ``trajectories`` + ``rewards`` to ``out`` with ``DataProto.save_to_disk``."""
    if not rewards.is_file():
        raise BatchError(f"{rewards} does not exist; pass the rewards.json the score step wrote")
    records = parse_rewards(rewards.read_bytes(), str(rewards))
    algorithm = config.algorithm if config is not None else AlgorithmConfig()
    context = {"max_model_len": config.engine.max_model_len} if config is not None else {}
    data, stats = build_batch(folder_trajectories(trajectories), records, algorithm, pad_token_id, **context)
    out.parent.mkdir(parents=True, exist_ok=True)
    data.save_to_disk(out)
    return stats
