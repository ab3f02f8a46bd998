"""Write a tiny, deterministic Qwen2 checkpoint that any HuggingFace reader can load.

The dev path needs a real model directory (config, safetensors weights, tokenizer, chat
template) that behaves like a Qwen2.5 checkpoint but runs on a laptop CPU. The weights
are random, drawn from a seeded generator, so the same seed always writes the same
bytes and a test can pin a checkpoint by hash.
"""

from __future__ import annotations

import json
from pathlib import Path

from components.engine._tokenizer_build import ADDED_TOKENS, EOS_TOKEN, PAD_TOKEN, build_tokenizer

HIDDEN_SIZE = 128
INTERMEDIATE_SIZE = 512
NUM_LAYERS = 2
NUM_HEADS = 4
NUM_KV_HEADS = 2
# Harness prompts (system prompt + tool schemas + history) run to tens of thousands of
# tokens with this small vocabulary; RoPE costs nothing for unused positions.
MAX_POSITION_EMBEDDINGS = 65536
# A random-weights model almost never samples its end-of-turn token, so an unbounded
# request would run to the context limit. vLLM reads max_new_tokens from
# generation_config.json as the default max_tokens; the dev engine does the same.
DEFAULT_MAX_NEW_TOKENS = 256
_INIT_STD = 0.02


def init_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write the tiny model into ``out_dir`` (created if missing) and return its path.

    The same ``seed`` writes byte-identical files; a different seed changes the weights
    only (tokenizer and chat template are shared by every seed).
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    token_id = {text: tokenizer.convert_tokens_to_ids(text) for text, _ in ADDED_TOKENS}

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN_SIZE,
        intermediate_size=INTERMEDIATE_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_KV_HEADS,
        max_position_embeddings=MAX_POSITION_EMBEDDINGS,
        rope_theta=10_000.0,
        tie_word_embeddings=True,
        bos_token_id=token_id[PAD_TOKEN],
        eos_token_id=token_id[EOS_TOKEN],
        pad_token_id=token_id[PAD_TOKEN],
        initializer_range=_INIT_STD,
        dtype="float32",
    )
    model = Qwen2ForCausalLM(config).to(torch.float32)
    fill_weights(model, seed)
    model.generation_config = generation_config(token_id)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    name_tokenizer_class(out / "tokenizer_config.json")
    return out


def generation_config(token_id: dict[str, int]) -> object:
    """End on <|im_end|> or <|endoftext|>, and vLLM's default max_tokens (see above)."""
    from transformers import GenerationConfig

    return GenerationConfig(
        bos_token_id=token_id[PAD_TOKEN],
        eos_token_id=[token_id[EOS_TOKEN], token_id[PAD_TOKEN]],
        pad_token_id=token_id[PAD_TOKEN],
        max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
    )


def fill_weights(model: object, seed: int) -> None:
    """Draw every weight from one seeded generator, in a fixed (sorted) order.

    Not relying on the library's own initialisation keeps the bytes stable across
    transformers releases that reorder or change their init routines.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            elif name.endswith(".bias"):
                param.zero_()
            else:
                param.copy_(torch.randn(param.shape, generator=generator) * _INIT_STD)


def name_tokenizer_class(config_path: Path) -> None:
    # transformers 5 writes its generic backend name, which older readers (vLLM images
    # pin their own transformers) do not know; Qwen2Tokenizer loads tokenizer.json on both.
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "Qwen2Tokenizer"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
