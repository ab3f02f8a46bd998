"""The train step: batch from the store's trajectories and rewards, the update (CPU or veRL), checkpoint k+1."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.config import ExperimentConfig
from components.core.metrics import merge_metrics, read_metrics
from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall
from components.core.trainer_config import TRAIN_WORK_DIR_ENV
from components.core.checkpoints import commit_checkpoint, fetch_committed, write_checkpoint_info
from components.trainer.batch import BatchStats, build_batch
from components.trainer.checkpoint import load_optimizer_state, save_checkpoint
from components.trainer.cpu_update import build_optimizer, cpu_update, freeze_vision_tower
from components.trainer.guards import check_trainable, check_usable
from components.trainer.inputs import parse_rewards, store_images, store_trajectories
from components.trainer.row_images import RowVision

_TRAIN_PREFIXES = ("train/", "batch/")


@dataclass
class IterationBatch:
    """One iteration's batch as the train step builds it, with what it was built from."""

    data: Any  # veRL DataProto
    stats: BatchStats
    reasons: dict[str, int]  # the scorer's unusable reasons, by reason
    calls: dict[str, list[RecordedCall]]
    parent: int  # the committed version the batch trains (its folder: work / "base")
    vision: RowVision | None
    decode: Any


def iteration_batch(config: ExperimentConfig, iteration: int, store: ArtifactStore, work: Path) -> IterationBatch:
    """Build iteration ``iteration``'s batch in ``work`` (the parent checkpoint lands in ``work/base``).

    The one way the batch is built: train trains on it, and distill scores the same rows
    with the teacher, so both see the same rows in the same order.
    """
    layout = RunLayout(config.name)
    rewards_key = layout.rewards(iteration)
    raw = store.get_bytes(rewards_key)
    records = parse_rewards(raw, f"{store.root}/{rewards_key}")
    reasons = json.loads(raw).get("unusable_reasons") or {}
    check_usable(records, config.rollout.min_usable_fraction, rewards_key, reasons)
    (work / "calls").mkdir()
    calls = store_trajectories(store, layout, iteration, [r.rollout_id for r in records if r.usable], work / "calls")
    parent = fetch_committed(store, layout, iteration, work / "base")
    if parent is None:
        raise FileNotFoundError(
            f"no committed checkpoint <= {iteration} under {store.root}/{layout.checkpoint(0)}: "
            "the serve step commits the initial policy as version 0; run it first"
        )
    decode = _decoder(work / "base")
    vision = RowVision.of(work / "base")
    images_of = store_images(store, layout, iteration, calls, work / "images") if vision is not None else None
    data, stats = build_batch(
        calls, records, config.algorithm, _pad_token_id(work / "base"), decode, config.engine.max_model_len,
        vision, images_of,
    )  # fmt: skip
    return IterationBatch(data, stats, reasons, calls, parent, vision, decode)


def train_iteration(config: ExperimentConfig, iteration: int, store: ArtifactStore) -> dict[str, float]:
    """Train checkpoint ``iteration`` into checkpoint ``iteration + 1``; returns the train metrics.

    Idempotent: when checkpoint k+1 is already committed, nothing is recomputed.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    layout = RunLayout(config.name)
    version = iteration + 1
    if store.exists(layout.checkpoint_marker(version)):
        done = read_metrics(store, layout.metrics(iteration))
        return {name: value for name, value in done.items() if name.startswith(_TRAIN_PREFIXES)}
    with tempfile.TemporaryDirectory(prefix="openforge-train-", dir=os.environ.get(TRAIN_WORK_DIR_ENV)) as tmp:
        work = Path(tmp)
        built = iteration_batch(config, iteration, store, work)
        data, stats, parent = built.data, built.stats, built.parent
        metrics = stats.metrics() | policy_lag(built.calls, parent)
        if stats.rows and config.algorithm.distillation is not None:
            from components.trainer.distill_step import add_teacher_term

            metrics.update(add_teacher_term(config, iteration, store, data))
        # Stored before the check below, so a batch refused as empty can still be looked at.
        data.save_to_disk(work / "batch.pt")
        store.put_bytes(layout.batch(iteration), (work / "batch.pt").read_bytes())
        trainable = check_trainable(stats, built.reasons, iteration, config.algorithm.allow_empty_update)
        metrics["batch/token_text_check_on"] = float(built.decode is not None)
        metrics["batch/empty_update"] = float(not trainable)
        info = {"policy_version": str(version), "iteration": iteration, "parent_version": str(parent), "rows": stats.rows}
        if not trainable:
            _warn_empty(iteration, stats)
            next_dir = _unchanged(work / "base", work / "next", info)
        elif config.trainer.backend == "verl":
            from components.trainer.verl_step import verl_update

            trained, next_dir = verl_update(config, data, work / "base", work, info)
            metrics.update(trained)
        else:
            loader = AutoModelForCausalLM if built.vision is None else AutoModelForImageTextToText
            model = loader.from_pretrained(work / "base", dtype=torch.float32)
            if config.trainer.freeze_vision_tower:
                metrics["train/frozen_params"] = float(freeze_vision_tower(model))
            optimizer = build_optimizer(model, config.algorithm, load_optimizer_state(work / "base"))
            metrics.update(cpu_update(model, data, config.algorithm, seed=config.seed, optimizer=optimizer))
            next_dir = save_checkpoint(model, work / "base", work / "next", info, optimizer)
        # Metrics before the marker: a committed checkpoint always has its metrics.
        merge_metrics(store, layout.metrics(iteration), metrics)
        commit_checkpoint(store, layout, version, next_dir)
    return metrics


def policy_lag(calls: Mapping[str, list[RecordedCall]], trained_from: int) -> dict[str, float]:
    """How many versions behind the trained checkpoint the batch's calls were sampled: 0 in
    order, 1 with overlapped iterations (``algorithm.max_staleness``; the update's ratio is
    against the recorded behaviour logprobs, so it corrects for the lag). Calls whose engine
    reported no version (an engine outside OpenForge) are left out."""
    lags = []
    for call in (c for rollout in calls.values() for c in rollout):
        # The dev engine reports the version; vLLM the path it loaded, whose last part is the version.
        version = (call.policy_version or "").rstrip("/").rsplit("/", 1)[-1]
        if version.isdigit():
            lags.append(trained_from - int(version))
    return {"batch/policy_lag_mean": sum(lags) / len(lags), "batch/policy_lag_max": float(max(lags))} if lags else {}


def _pad_token_id(model_dir: Path) -> int:
    from transformers import AutoConfig

    # A vision-language config keeps its token ids in its text config.
    pad = AutoConfig.from_pretrained(model_dir).get_text_config(decoder=True).pad_token_id
    return pad if pad is not None else 0


def _decoder(model_dir: Path):
    """The policy tokenizer's decode for the token/text check; None (check off) without a usable tokenizer."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return lambda ids, skip_special: tokenizer.decode(ids, skip_special_tokens=skip_special)


def _warn_empty(iteration: int, stats) -> None:
    # Allowed, but never quiet: the run's log says it as loudly as the metrics do.
    print(
        f"warning: iteration {iteration} trained nothing (batch/trained_tokens 0, batch/skipped_groups "
        f"{stats.skipped_groups}, batch/dropped_rows {stats.dropped_rows}); committing the unchanged checkpoint "
        "because algorithm.allow_empty_update is true",
        file=sys.stderr,
    )


def _unchanged(parent: Path, out: Path, info: dict) -> Path:
    """Checkpoint k+1 = checkpoint k's files (no group had signal), with its own version info."""
    shutil.copytree(parent, out)
    write_checkpoint_info(out, info)
    return out
