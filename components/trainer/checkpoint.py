"""Save the next checkpoint locally; finding and committing them is ``components.core.checkpoints``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from components.core.checkpoints import CHECKPOINT_INFO, write_checkpoint_info

# Files save_pretrained rewrites, or that belong to one version only; everything else
# (tokenizer, chat template) is carried over byte for byte so every version tokenises alike.
_NOT_INHERITED = re.compile(r"(\.safetensors|\.bin|\.index\.json|^config\.json|^generation_config\.json)$")


def is_inherited(name: str) -> bool:
    """Whether a top-level file of a checkpoint passes unchanged from one version to the next."""
    return name != CHECKPOINT_INFO and not _NOT_INHERITED.search(name)


def inherit_files(parent: Path, out: Path) -> None:
    """Copy the parent's tokenizer and template files into ``out``, byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(parent.iterdir()):
        if path.is_file() and is_inherited(path.name):
            shutil.copy2(path, out / path.name)


def save_checkpoint(model: Any, parent: Path, out: Path, info: dict[str, Any]) -> Path:
    """Write ``model`` as a HuggingFace folder, inheriting the parent's tokenizer files."""
    inherit_files(parent, out)
    model.save_pretrained(out, safe_serialization=True)
    write_checkpoint_info(out, info)
    return out
