"""The GPU step's checkpoint: veRL's FSDP shards -> one HuggingFace folder, via veRL's model merger.

``verl.model_merger``'s ``FSDPModelMerger`` reassembles the shards (DTensor placements
included), casts them to bfloat16 (what vLLM serves), splits a LoRA model into base
weights plus ``lora_adapter/`` and saves the result. Of that folder the checkpoint keeps
the weights, ``config.json``, ``generation_config.json`` and the adapter; tokenizer and
chat template are the parent checkpoint's, byte for byte (the merger re-saves the
tokenizer, which transformers 5 rewrites), as on the CPU path.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from components.core.checkpoints import LORA_ADAPTER_DIR, write_checkpoint_info
from components.trainer.checkpoint import inherit_files, is_inherited

FSDP_CONFIG = "fsdp_config.json"
HF_CONFIG_DIR = "huggingface"  # where veRL's FSDP checkpoint manager puts config and tokenizer


class ExportError(ValueError):
    """A trainer output that is not an FSDP actor checkpoint; the message names what is missing."""


def merge_fsdp_actor(actor_dir: Path, target: Path) -> Path:
    """veRL's model merger on ``actor_dir`` (``model_world_size_W_rank_R.pt`` + ``fsdp_config.json`` + ``huggingface/``)."""
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    for needed in (FSDP_CONFIG, HF_CONFIG_DIR):
        if not (actor_dir / needed).exists():
            raise ExportError(f"{actor_dir} has no {needed}: not an FSDP actor checkpoint written by veRL's save_checkpoint")
    target.mkdir(parents=True, exist_ok=True)
    merger = FSDPModelMerger(
        ModelMergerConfig(
            operation="merge",
            backend="fsdp",
            local_dir=str(actor_dir),
            target_dir=str(target),
            hf_model_config_path=str(actor_dir / HF_CONFIG_DIR),
        )
    )
    merger.merge_and_save()
    merger.cleanup()
    return target


def export_checkpoint(actor_dir: Path, parent: Path, out: Path, info: dict[str, Any]) -> Path:
    """Checkpoint ``out`` from the actor's FSDP shards, with the parent's tokenizer files and ``info``."""
    with tempfile.TemporaryDirectory(prefix="openforge-merge-") as tmp:
        merged = merge_fsdp_actor(actor_dir, Path(tmp) / "merged")
        inherit_files(parent, out)
        for path in sorted(merged.iterdir()):
            if path.is_file() and not is_inherited(path.name):
                shutil.copy2(path, out / path.name)
        if (merged / LORA_ADAPTER_DIR).is_dir():
            shutil.copytree(merged / LORA_ADAPTER_DIR, out / LORA_ADAPTER_DIR)
    write_checkpoint_info(out, info)
    return out
