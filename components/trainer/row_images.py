"""A vision-language policy's rows carry their images (docs/trainer.md, "Images (GUI agents)").

The engine expanded each image of a prompt into a run of the model's image pad token, one
per merged patch group, and the proxy stored the image itself. A row's tokens therefore
hold its images as pad runs, and the row's last call's prompt holds all of them (a row is
a prompt continued call by call). For each row this module gives what veRL's actor and
the CPU update read:

- ``multi_modal_inputs``: ``pixel_values``, ``image_grid_thw`` and ``images_seqlens`` of
  those images, from the checkpoint's own image processor, in prompt order;
- ``position_ids`` of shape (4, width): text positions, then the model's multimodal RoPE
  (time, height, width) from its own ``get_rope_index``, veRL's layout;
- a check that the processor yields exactly the recorded number of vision tokens per
  image. A row that fails it is left out with its own reason (``vision_token_mismatch``,
  or ``image_missing`` when the store lacks an image), counted in ``batch/dropped/*``.
"""

from __future__ import annotations

import io
import types
from pathlib import Path
from typing import Any, Callable, Sequence

from components.core.model_kind import is_vision_language

VISION_TOKEN_MISMATCH = "vision_token_mismatch"
IMAGE_MISSING = "image_missing"


class RowVision:
    """The checkpoint's image processor and M-RoPE, applied to training rows."""

    def __init__(self, model_dir: Path) -> None:
        from transformers import AutoConfig, Qwen2VLImageProcessorPil
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel

        self.config = AutoConfig.from_pretrained(model_dir)
        self.image_processor = Qwen2VLImageProcessorPil.from_pretrained(model_dir)
        self.pad_id = int(self.config.image_token_id)
        self._merge = int(self.config.vision_config.spatial_merge_size)
        # get_rope_index reads only the config and a helper that reads nothing of the
        # model: the batch gets the model's own positions without loading its weights.
        rope = types.SimpleNamespace(config=self.config)
        rope.get_vision_position_ids = lambda *a, **k: Qwen2VLModel.get_vision_position_ids(rope, *a, **k)
        self._rope = rope
        self._rope_index = Qwen2VLModel.get_rope_index

    @classmethod
    def of(cls, model_dir: Path) -> "RowVision | None":
        """The vision side of a checkpoint; None for a text model."""
        return cls(model_dir) if is_vision_language(model_dir) else None

    def inputs(self, token_ids: Sequence[int], images: Sequence[bytes]) -> dict[str, Any] | str:
        """The row's ``multi_modal_inputs``, or the reason it cannot train (a drop reason)."""
        from PIL import Image

        runs = _pad_runs(token_ids, self.pad_id)
        if not images and not runs:
            return {}
        if len(runs) != len(images):
            return VISION_TOKEN_MISMATCH
        opened = [Image.open(io.BytesIO(data)).convert("RGB") for data in images]
        pixels = self.image_processor(images=opened, return_tensors="pt")
        grid = pixels["image_grid_thw"]
        if (grid.prod(-1) // self._merge**2).tolist() != runs:
            return VISION_TOKEN_MISMATCH
        seqlens = (grid[:, 1] * grid[:, 2]).repeat_interleave(grid[:, 0])
        return {"pixel_values": pixels["pixel_values"], "image_grid_thw": grid, "images_seqlens": seqlens}

    def positions(self, input_ids: Any, attention_mask: Any, inputs: dict[str, Any]) -> Any:
        """(4, width) positions of one padded row: text positions, then time, height, width."""
        import torch

        present = attention_mask.bool()
        text = torch.zeros_like(input_ids)
        text[present] = torch.arange(int(present.sum()))
        if not inputs:
            return text.unsqueeze(0).expand(4, -1).clone()
        rope, _ = self._rope_index(
            self._rope,
            input_ids.unsqueeze(0),
            mm_token_type_ids=((input_ids == self.pad_id) & present).to(torch.int32).unsqueeze(0),
            image_grid_thw=inputs["image_grid_thw"],
            attention_mask=attention_mask.unsqueeze(0),
        )
        return torch.cat([text.unsqueeze(0), rope[:, 0, :]], dim=0)


def _pad_runs(token_ids: Sequence[int], pad_id: int) -> list[int]:
    """Lengths of the runs of ``pad_id``: one per image, in order."""
    runs: list[int] = []
    previous = None
    for token in token_ids:
        if token == pad_id:
            if previous == pad_id:
                runs[-1] += 1
            else:
                runs.append(1)
        previous = token
    return runs


ImagesOf = Callable[[str, int], list[bytes]]  # (rollout id, call index) -> that call's prompt images
