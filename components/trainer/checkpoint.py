"""Save the next checkpoint locally; finding and committing them is ``components.core.checkpoints``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from components.core.checkpoints import CHECKPOINT_INFO, write_checkpoint_info

# The CPU trainer's AdamW state beside the weights (veRL's FSDP checkpoints keep theirs too):
# the next iteration resumes it. HF readers and vLLM load the safetensors and ignore it.
OPTIMIZER_FILE = "optimizer.pt"
# Files save_pretrained rewrites, or that belong to one version only (the optimizer state
# matches its own weights); everything else (tokenizer, chat template) is carried over
# byte for byte so every version tokenises alike.
_NOT_INHERITED = re.compile(
    r"(\.safetensors|\.bin|\.index\.json|^config\.json|^generation_config\.json|^" + re.escape(OPTIMIZER_FILE) + ")$"
)


def is_inherited(name: str) -> bool:
    """Whether a top-level file of a checkpoint passes unchanged from one version to the next."""
    return name != CHECKPOINT_INFO and not _NOT_INHERITED.search(name)


def inherit_files(parent: Path, out: Path) -> None:
    """Copy the parent's tokenizer and template files into ``out``, byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(parent.iterdir()):
        if path.is_file() and is_inherited(path.name):
            shutil.copy2(path, out / path.name)


def save_checkpoint(model: Any, parent: Path, out: Path, info: dict[str, Any], optimizer: Any = None) -> Path:
    """Write ``model`` as a HuggingFace folder, inheriting the parent's tokenizer files,
    and ``optimizer``'s state as ``optimizer.pt`` when given."""
    import torch

    inherit_files(parent, out)
    model.save_pretrained(out, safe_serialization=True)
    if optimizer is not None:
        torch.save(optimizer.state_dict(), out / OPTIMIZER_FILE)
    write_checkpoint_info(out, info)
    return out


def load_optimizer_state(checkpoint: Path) -> dict | None:
    """The optimizer state saved with ``checkpoint``; None (a fresh AdamW) when it has none."""
    import torch

    path = checkpoint / OPTIMIZER_FILE
    return torch.load(path, map_location="cpu", weights_only=True) if path.is_file() else None
