"""The tiny model directory: deterministic bytes, loadable by transformers, Qwen-shaped."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from components.core.services import openforge_argv
from components.engine.tiny_model import init_tiny_model
from tests._servers import REPO


def _hashes(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def test_same_seed_writes_byte_identical_directory_from_another_process(tiny_model_dir: Path, tmp_path: Path) -> None:
    # A separate process: the tokenizer trainer must not depend on per-process hash seeds.
    argv = openforge_argv("model", "init-tiny", str(tmp_path / "again"), "--seed", "0")
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    again = _hashes(tmp_path / "again")
    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= set(again)
    assert again == _hashes(tiny_model_dir)


def test_other_seed_changes_weights_but_not_tokenizer(tiny_model_dir: Path, tmp_path: Path) -> None:
    seed0, seed1 = _hashes(tiny_model_dir), _hashes(init_tiny_model(tmp_path / "seed1", seed=1))
    assert seed0["model.safetensors"] != seed1["model.safetensors"]
    assert seed0["tokenizer.json"] == seed1["tokenizer.json"]
    assert seed0["config.json"] == seed1["config.json"]


def test_loads_with_auto_classes_as_a_small_long_context_qwen2(tiny_model_dir: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert config.model_type == "qwen2" and config.tie_word_embeddings
    assert config.max_position_embeddings >= 32768
    assert config.vocab_size == len(tokenizer)
    assert 500_000 < sum(p.numel() for p in model.parameters()) < 5_000_000
    assert next(model.parameters()).dtype.is_floating_point and str(next(model.parameters()).dtype) == "torch.float32"
    qwen_added = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
    for token in [*qwen_added, "<tool_response>", "</tool_response>"]:
        assert tokenizer.convert_ids_to_tokens(tokenizer.convert_tokens_to_ids(token)) == token
        assert tokenizer.encode(token, add_special_tokens=False) == [tokenizer.convert_tokens_to_ids(token)]


def test_generation_config_stops_on_end_of_turn_and_end_of_text(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    generation = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    assert tokenizer.eos_token == "<|im_end|>"


def test_tool_tags_survive_decoding_without_special_tokens(tiny_model_dir: Path) -> None:
    """vLLM's hermes parser reads the decoded text; Qwen marks only ChatML delimiters special."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = '<tool_call>\n{"name": "ls"}\n</tool_call>'
    ids = tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
