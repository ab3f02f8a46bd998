"""Synthetic recorded calls and a tiny random Qwen2 for the trainer tests."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from components.core.outcome import RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall

VOCAB = 64
PAD = 0


def _call(
    index: int,
    prompt: list[int],
    completion: list[int],
    session: str = "t-s0",
    temperature: float | None = 1.0,
    logprob: float = -0.5,
    **fields,
) -> RecordedCall:
    return RecordedCall(
        session_id=session,
        call_index=index,
        api=fields.pop("api", "chat.completions"),
        request=fields.pop("request", {}),
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        completion_logprobs=[logprob] * len(completion),
        sampling=fields.pop("sampling", {"temperature": temperature}),
        started_at=0.0,
        latency_ms=1.0,
        upstream_status=fields.pop("upstream_status", 200),
        **fields,
    )


def _record(rollout_id: str, reward: float, task: str = "t", usable: bool = True) -> RewardRecord:
    return RewardRecord(
        rollout_id=rollout_id, task_id=task, group_id=f"it0-{task}", reward=reward, usable=usable, status=RolloutStatus.OK
    )


@pytest.fixture
def call() -> Callable[..., RecordedCall]:
    return _call


@pytest.fixture
def record() -> Callable[..., RewardRecord]:
    return _record


@pytest.fixture
def two_turn_group() -> tuple[dict[str, list[RecordedCall]], list[RewardRecord]]:
    """Task t: s0 (reward 1) makes two calls, the second extending the first by a tool
    output [20, 21]; s1 (reward 0) makes one call. Every token id is below VOCAB."""
    calls = {
        "t-s0": [_call(0, [1, 2, 3], [4, 5]), _call(1, [1, 2, 3, 4, 5, 20, 21], [6, 7, 8])],
        "t-s1": [_call(0, [1, 2], [9, 10], session="t-s1")],
    }
    return calls, [_record("t-s0", 1.0), _record("t-s1", 0.0)]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer, 32-wide random Qwen2 plus a stand-in tokenizer file to carry over."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=PAD,
    )
    out = tmp_path_factory.mktemp("tiny-model")
    Qwen2ForCausalLM(config).save_pretrained(out)
    (out / "tokenizer.json").write_text('{"stand-in": true}\n')
    return out
