"""Which checkpoints are vision-language models: the engine then reads a request's images,
and the trainer gives each row its pixels (docs/engine.md and docs/trainer.md, "Images")."""

from __future__ import annotations

import json
from pathlib import Path

# Qwen2-VL's layout (image pad runs, multimodal RoPE), the one both sides implement.
VISION_LANGUAGE_TYPES = frozenset({"qwen2_vl"})


def is_vision_language(model_dir: str | Path) -> bool:
    """Whether the checkpoint in ``model_dir`` is a vision-language model both sides serve and train."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    return config.get("model_type") in VISION_LANGUAGE_TYPES
