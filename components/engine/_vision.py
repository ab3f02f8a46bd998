"""Images for a vision-language model (Qwen2-VL's layout) served by the dev engine.

A chat request's image parts become one image marker each in the prompt text
(``_chat_render``); here each marker's pad token is expanded into one token per merged
patch, as Qwen2-VL's processor does, so the recorded ``prompt_token_ids`` are exactly what
the trainer's processor gives for the same text and images. The model then sees:

- the vision tower's embedding of each patch group in place of its pad token;
- multimodal RoPE positions (time, height, width) from the model's own ``get_rope_index``,
  text after an image continuing from the image's largest position;
- a prefix-cache key in which every image token names its image (digest and index), so
  two screenshots never share cached attention although their pad ids are equal.

Positions are computed for the whole prompt once per request and passed explicitly for
every chunk, so nothing depends on the state Qwen2-VL keeps between ``generate`` calls.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.engine._protocol import ApiError
from components.engine.tiny_vl_model import IMAGE_PAD

_KEY_SLOTS = 1 << 24  # image tokens per image that get distinct cache keys (far above any processor's cap)


@dataclass(frozen=True)
class VisionInputs:
    """A prompt's images as the model reads them, in prompt order."""

    pixel_values: Any  # float tensor [patches, channels * temporal * patch * patch]
    grid_thw: Any  # long tensor [images, 3]: temporal, height, width patches
    digests: tuple[str, ...]  # SHA-256 of each image's bytes
    token_counts: tuple[int, ...]  # vision tokens of each image in the prompt


class ImageExpander:
    """Turns a prompt's image markers and image bytes into expanded ids and model inputs."""

    def __init__(self, model_dir: Path, config: Any, tokenizer: Any) -> None:
        from transformers import Qwen2VLImageProcessorPil

        self.image_processor = Qwen2VLImageProcessorPil.from_pretrained(model_dir)
        self.pad_id = int(config.image_token_id)
        self.merge = int(config.vision_config.spatial_merge_size)
        if tokenizer.convert_tokens_to_ids(IMAGE_PAD) != self.pad_id:
            raise ValueError(f"the tokenizer's {IMAGE_PAD} is not the config's image_token_id {self.pad_id}")

    def expand(self, ids: list[int], images: list[bytes]) -> tuple[list[int], VisionInputs | None]:
        """``ids`` with each image's pad token repeated once per vision token; ApiError when
        markers and images disagree or an image cannot be read."""
        markers = ids.count(self.pad_id)
        if markers != len(images):
            raise ApiError(
                f"the prompt holds {markers} image marker(s) ({IMAGE_PAD}) but the request {len(images)} image(s): "
                "send images as image_url parts, not as marker text",
                param="messages",
            )
        if not images:
            return ids, None
        pixels = self._pixels(images)
        counts = (pixels["image_grid_thw"].prod(-1) // self.merge**2).tolist()
        expanded: list[int] = []
        start, image = 0, 0
        for index, token in enumerate(ids):
            if token == self.pad_id:
                expanded.extend(ids[start:index])
                expanded.extend([self.pad_id] * counts[image])
                start, image = index + 1, image + 1
        expanded.extend(ids[start:])
        digests = tuple(hashlib.sha256(data).hexdigest() for data in images)
        return expanded, VisionInputs(pixels["pixel_values"], pixels["image_grid_thw"], digests, tuple(counts))

    def _pixels(self, images: list[bytes]) -> Any:
        from PIL import Image, UnidentifiedImageError

        opened = []
        for index, data in enumerate(images):
            try:
                with Image.open(io.BytesIO(data)) as image:
                    opened.append(image.convert("RGB"))
            except (UnidentifiedImageError, OSError, ValueError) as exc:
                raise ApiError(f"image {index} of the request cannot be read as an image ({exc})", param="messages") from None
        return self.image_processor(images=opened, return_tensors="pt")


class VisionPrompt:
    """One request's prompt on a vision-language model: cache keys, positions and the image
    embeddings the forward passes need, for the prompt and whatever follows it."""

    def __init__(self, model: Any, prompt_ids: list[int], vision: VisionInputs | None, pad_id: int) -> None:
        import torch

        self._model = model
        self._vision = vision
        self._prompt_len = len(prompt_ids)
        self._image_rows = torch.tensor([token == pad_id for token in prompt_ids], dtype=torch.bool)
        self._embeds: Any = None  # the vision tower runs only if an image token is not cached
        if vision is None:
            self.keys = list(prompt_ids)
            self._positions = torch.arange(len(prompt_ids)).expand(3, -1)
            self._delta = 0
            return
        ids = torch.tensor([prompt_ids])
        positions, delta = model.model.get_rope_index(
            ids, mm_token_type_ids=self._image_rows.to(torch.int32).unsqueeze(0), image_grid_thw=vision.grid_thw
        )
        self._positions, self._delta = positions[:, 0, :], int(delta.reshape(-1)[0])
        self.keys = _keys(prompt_ids, pad_id, vision)

    def key_of(self, start: int, token_ids: list[int]) -> list[int]:
        """Cache keys of ``token_ids`` placed at ``start``: image keys inside the prompt, ids after it."""
        inside = max(0, min(len(token_ids), self._prompt_len - start))
        return self.keys[start : start + inside] + token_ids[inside:]

    def inputs(self, start: int, token_ids: list[int]) -> dict[str, Any]:
        """The forward pass's ``inputs_embeds`` and ``position_ids`` for ``token_ids`` at ``start``."""
        import torch

        end = start + len(token_ids)
        embeds = self._model.get_input_embeddings()(torch.tensor([token_ids]))
        inside = min(end, self._prompt_len)
        positions = [self._positions[:, start:inside]] if start < inside else []
        if end > max(start, self._prompt_len):
            after = torch.arange(max(start, self._prompt_len), end) + self._delta
            positions.append(after.expand(3, -1))
        if start < inside and bool(self._image_rows[start:inside].any()):
            rows = self._image_rows[start:inside]
            first = int(self._image_rows[:start].sum())
            chosen = self._image_embeds()[first : first + int(rows.sum())]
            embeds[0, : inside - start][rows] = chosen.to(embeds.dtype)
        return {"inputs_embeds": embeds, "position_ids": torch.cat(positions, dim=1).unsqueeze(1)}

    def _image_embeds(self) -> Any:
        import torch

        if self._embeds is None:
            assert self._vision is not None
            pieces = self._model.model.get_image_features(self._vision.pixel_values, self._vision.grid_thw).pooler_output
            self._embeds = torch.cat(pieces, dim=0)
        return self._embeds


def _keys(prompt_ids: list[int], pad_id: int, vision: VisionInputs) -> list[int]:
    """Prompt ids with each image token replaced by a negative key naming its image and
    place in it (token ids are never negative)."""
    slots = iter(
        -(1 + int(digest[:15], 16) * _KEY_SLOTS + within)
        for digest, count in zip(vision.digests, vision.token_counts)
        for within in range(count)
    )
    return [next(slots) if token == pad_id else token for token in prompt_ids]
