"""Write a tiny, deterministic Qwen2-VL checkpoint: the tiny text model's language model
with a small vision tower in front, and the processor that turns screenshots into its
vision tokens.

GUI agents are trained as vision-language policies, so the dev path needs one that runs
on a laptop CPU and that HuggingFace, the dev engine and the trainer all load as they
would a real Qwen2-VL: ``Qwen2VLForConditionalGeneration`` weights, the tiny model's
tokenizer plus Qwen2-VL's vision tokens, its chat template, and a processor
(``preprocessor_config.json``) whose pixel bounds cap what a screenshot costs. Weights are
random, drawn from a seeded generator, so the same seed writes the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.engine._tokenizer_build import ADDED_TOKENS, EOS_TOKEN, PAD_TOKEN, build_tokenizer
from components.engine.tiny_model import (
    HIDDEN_SIZE,
    INTERMEDIATE_SIZE,
    MAX_POSITION_EMBEDDINGS,
    NUM_HEADS,
    NUM_KV_HEADS,
    NUM_LAYERS,
    fill_weights,
    generation_config,
    name_tokenizer_class,
)

# Qwen2-VL's own names: vLLM, the processor and the chat template look for these strings.
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"
VISION_TOKENS = (VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD)
# What an image part becomes in the prompt text; the processor expands the pad into one
# token per merged patch.
IMAGE_MARKER = VISION_START + IMAGE_PAD + VISION_END

PATCH_SIZE = 14
MERGE_SIZE = 2
TOKEN_PIXELS = (PATCH_SIZE * MERGE_SIZE) ** 2  # one vision token covers a 28 x 28 square
# A 1280 x 800 screenshot is scaled to at most this many vision tokens: a multi-turn GUI
# conversation of a dozen screenshots stays a few thousand tokens long on a CPU.
MAX_IMAGE_TOKENS = 96
MIN_IMAGE_TOKENS = 4
VISION_DEPTH = 2
VISION_EMBED_DIM = 64
VISION_HEADS = 2
# Multimodal RoPE splits each head's rotary half (head_dim / 2 = 16) over time, height, width.
MROPE_SECTION = (4, 6, 6)


def init_tiny_vl_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write the tiny vision-language model into ``out_dir`` (created if missing); its path."""
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_vl_tokenizer()
    token_id = {text: tokenizer.convert_tokens_to_ids(text) for text in (*dict(ADDED_TOKENS), *VISION_TOKENS)}
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": HIDDEN_SIZE,
            "intermediate_size": INTERMEDIATE_SIZE,
            "num_hidden_layers": NUM_LAYERS,
            "num_attention_heads": NUM_HEADS,
            "num_key_value_heads": NUM_KV_HEADS,
            "max_position_embeddings": MAX_POSITION_EMBEDDINGS,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10_000.0, "mrope_section": list(MROPE_SECTION)},
            "bos_token_id": token_id[PAD_TOKEN],
            "eos_token_id": token_id[EOS_TOKEN],
            "pad_token_id": token_id[PAD_TOKEN],
            "tie_word_embeddings": True,
            "dtype": "float32",
        },
        vision_config={
            "depth": VISION_DEPTH,
            "embed_dim": VISION_EMBED_DIM,
            "num_heads": VISION_HEADS,
            "mlp_ratio": 2,
            # veRL 0.9.1 estimates a Qwen2-VL tower's FLOPs with its Qwen3-VL formula, which
            # reads these two Qwen2.5/3-VL fields and stops the update without them
            # (docs/trainer.md, "Images"); they change nothing in the model.
            "intermediate_size": VISION_EMBED_DIM * 2,
            "out_hidden_size": HIDDEN_SIZE,
            "hidden_size": HIDDEN_SIZE,  # the merger projects patches into the language model's width
            "patch_size": PATCH_SIZE,
            "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": 2,
        },
        image_token_id=token_id[IMAGE_PAD],
        video_token_id=token_id[VIDEO_PAD],
        vision_start_token_id=token_id[VISION_START],
        vision_end_token_id=token_id[VISION_END],
        tie_word_embeddings=True,
        dtype="float32",
    )
    model = Qwen2VLForConditionalGeneration(config).to(torch.float32)
    fill_weights(model, seed)
    model.generation_config = generation_config(token_id)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    build_image_processor().save_pretrained(out)
    name_tokenizer_class(out / "tokenizer_config.json")
    _sort_json(out / "preprocessor_config.json")
    return out


def build_vl_tokenizer() -> Any:
    """The tiny model's tokenizer with Qwen2-VL's vision tokens after its own (ids 4096 on)."""
    tokenizer = build_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": list(VISION_TOKENS)})
    return tokenizer


def build_image_processor() -> Any:
    """Qwen2-VL's image processor, bounded by the pixel caps above.

    The PIL one: the same resize and normalisation as the torchvision one, and it needs no
    torchvision (which this project does not install; Qwen2-VL's full processor, which
    also handles videos, requires it).
    """
    from transformers import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        min_pixels=MIN_IMAGE_TOKENS * TOKEN_PIXELS,
        max_pixels=MAX_IMAGE_TOKENS * TOKEN_PIXELS,
        patch_size=PATCH_SIZE,
        merge_size=MERGE_SIZE,
        temporal_patch_size=2,
    )


def _sort_json(path: Path) -> None:
    # Stable bytes: the processor writes its settings in whatever order it holds them.
    if path.exists():
        path.write_text(json.dumps(json.loads(path.read_text()), indent=2, sort_keys=True) + "\n")
