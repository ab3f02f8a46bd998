"""The train step's GPU update: veRL's trainer on the recorded batch, then the exported checkpoint.

Runs where ``trainer.backend`` is ``verl``: on the Ray that ``local_ray`` picks (the
cluster's, a local one, or several local nodes), brings up the actor workers on ``trainer.n_gpus_per_node`` x
``trainer.nnodes`` GPUs, makes one update, saves the FSDP shards and merges them into
checkpoint k+1 with veRL's model merger. ``trainer.device: cpu`` runs the same workers on
the CPU (``verl_cpu_platform``). The world size is fixed by the config, not by
the batch: the batch is padded to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.core.config import ExperimentConfig
from components.core.model_kind import is_vision_language
from components.trainer.cpu_update import UpdateError
from components.trainer.local_ray import ray_for_update
from components.trainer.ray_placement import WORKERS_DEADLINE_S, check_placement, within_deadline
from components.trainer.verl_config import trainer_verl_config
from components.trainer.verl_export import export_checkpoint
from components.trainer.verl_trainer import build_trainer

# veRL's actor metrics under the names the CPU update reports, so dashboards read both.
_SHARED_NAMES = {
    "actor/pg_loss": "train/loss",
    "actor/ppo_kl": "train/kl",
    "actor/pg_clipfrac": "train/clip_frac",
    "actor/grad_norm": "train/grad_norm",
}


def train_metrics(verl_metrics: dict[str, float]) -> dict[str, float]:
    """``train/*`` names for veRL's metrics: the shared four, and every metric under ``train/verl/``."""
    named = {ours: verl_metrics[theirs] for theirs, ours in _SHARED_NAMES.items() if theirs in verl_metrics}
    return {**named, **{f"train/verl/{name}": value for name, value in verl_metrics.items()}}


def verl_update(config: ExperimentConfig, data: Any, parent: Path, work: Path, info: dict[str, Any]) -> tuple[dict[str, float], Path]:
    """One veRL update of the model in ``parent`` on ``data``; returns (train metrics, checkpoint folder)."""
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    if config.trainer.device == "cpu" and is_vision_language(parent):
        # Measured with veRL 0.9.1: its CPU workers compute the old log-probs of a Qwen2-VL
        # batch (with use_remove_padding off) but the update fails selecting rows of its
        # (rows, 4, width) positions as nested tensors (docs/trainer.md, "Images").
        raise UpdateError(
            "veRL's CPU workers cannot update a vision-language policy yet; set trainer.backend: cpu "
            "(the CPU update trains it, vision tower included)"
        )
    world = config.trainer.world_size
    rows = len(data) + (-len(data)) % world
    verl_config = trainer_verl_config(config, model_path=parent, output_dir=work / "fsdp", rows=rows)
    with ray_for_update(config.trainer, get_ppo_ray_runtime_env(verl_config)):
        # veRL waits on its placement without a timeout: refuse what cannot be placed, bound the rest.
        check_placement(config.trainer.n_gpus_per_node, config.trainer.nnodes)
        trainer = build_trainer(verl_config)
        within_deadline(trainer.init_workers, WORKERS_DEADLINE_S, "starting veRL's workers")
        metrics = trainer.train_step(data)
        actor = trainer.save_actor(work / "actor")
    return train_metrics(metrics), export_checkpoint(actor, parent, work / "next", info)
