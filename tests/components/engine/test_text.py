"""Incremental detokenization: released pieces add up to the final text, stops cut it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.engine._text import TextAssembler


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _feed(assembler: TextAssembler, ids: list[int]) -> tuple[list[str], str | None]:
    pieces = []
    for token in ids:
        piece, stop = assembler.add(token)
        pieces.append(piece)
        if stop is not None:
            return pieces, stop
    pieces.append(assembler.flush())
    return pieces, None


def test_multibyte_characters_split_across_tokens_come_out_whole(tokenizer: Any) -> None:
    text = "naïve café → 東京 🙂 done"
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces, stop = _feed(TextAssembler(tokenizer, skip_special_tokens=True), ids)
    assert stop is None and "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)


def test_stop_string_spanning_tokens_ends_text_before_it(tokenizer: Any) -> None:
    ids = tokenizer.encode("alpha beta STOP gamma", add_special_tokens=False)
    pieces, stop = _feed(TextAssembler(tokenizer, skip_special_tokens=True, stop=("STOP",)), ids)
    assert stop == "STOP" and "".join(pieces) == "alpha beta "


def test_stop_string_kept_when_asked(tokenizer: Any) -> None:
    ids = tokenizer.encode("alpha beta STOP gamma", add_special_tokens=False)
    assembler = TextAssembler(tokenizer, skip_special_tokens=True, stop=("STOP",), include_stop_str_in_output=True)
    pieces, stop = _feed(assembler, ids)
    assert stop == "STOP" and "".join(pieces) == "alpha beta STOP"


def test_special_tokens_are_dropped_or_kept_as_asked(tokenizer: Any) -> None:
    ids = tokenizer.encode("a<|im_start|>b", add_special_tokens=False)
    kept, _ = _feed(TextAssembler(tokenizer, skip_special_tokens=False), ids)
    dropped, _ = _feed(TextAssembler(tokenizer, skip_special_tokens=True), ids)
    assert "".join(kept) == "a<|im_start|>b" and "".join(dropped) == "ab"
