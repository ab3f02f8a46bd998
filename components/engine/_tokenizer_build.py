"""Train the tiny model's byte-level BPE tokenizer and give it Qwen's special tokens."""

from __future__ import annotations

import functools
from typing import Any

from components.engine._chat_template import CHAT_TEMPLATE
from components.engine._corpus import build_corpus

VOCAB_SIZE = 4096

# (content, special): Qwen2.5 marks the ChatML delimiters special (dropped when decoding
# with skip_special_tokens) but not the tool tags, which must survive decoding so the
# hermes tool parser can see them.
ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
)
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# Qwen2's pre-tokenizer split: digits one by one, letters in runs, punctuation runs.
_QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def build_tokenizer() -> Any:
    """Return a ``transformers`` fast tokenizer; identical on every call and machine."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_trained_tokenizer_json()),
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=1 << 20,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


@functools.cache
def _trained_tokenizer_json() -> str:
    """Train once per process (about a second); every model written shares the result."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, trainers

    core = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    core.normalizer = normalizers.NFC()
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(ADDED_TOKENS),
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    core.train_from_iterator(build_corpus(), trainer=trainer)
    for text, special in ADDED_TOKENS:  # one by one: ids follow ADDED_TOKENS' order
        token = AddedToken(text, special=special, normalized=False)
        if special:
            core.add_special_tokens([token])
        else:  # add_special_tokens would mark it special, and decoding would drop it
            core.add_tokens([token])
    return core.to_str()
