"""The engine/trainer log-prob gap on real vLLM (its CPU build): calls sampled by vLLM and
recorded through the proxy in training mode, re-scored by the CPU update's first forward
pass on the same checkpoint (``train/logprob_gap_*``, docs/trainer.md).

Both sides run float32 here, so what remains is kernel order: vLLM's CPU attention and
matmuls against transformers' eager ones. The measured figure is in docs/engine.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
import torch
from tests._servers import start_proxy_process

from components.core import read_session
from components.core.config import AlgorithmConfig
from components.core.outcome import RewardRecord, RolloutStatus
from components.engine import init_tiny_model
from components.trainer.batch import build_batch
from components.trainer.cpu_update import cpu_update

pytestmark = pytest.mark.slow

# float32 on both sides: measured max 1e-6 on the tiny model (docs/engine.md); another
# checkpoint's mean is ~0.3.
TOLERANCE = 1e-4
SESSIONS = 4
PROMPTS = ["Write a short poem about the sea.", "List three colours.", "What is two plus two?", "Say hello."]


@pytest.fixture(scope="module")
def recorded_batch(vllm_engine, tmp_path_factory):
    """Four sessions of two chat turns sampled by vLLM through a training-mode proxy, as one
    GRPO group whose rewards differ (so every row trains)."""
    work = tmp_path_factory.mktemp("logprob-gap")
    proxy = start_proxy_process(vllm_engine.url, work / "out", work, "--training")
    try:
        for index in range(SESSIONS):
            client = openai.OpenAI(base_url=f"{proxy.url}/s/s{index}/v1", api_key="unused", max_retries=0, timeout=300)
            messages = [{"role": "user", "content": PROMPTS[index]}]
            for _ in range(2):
                reply = client.chat.completions.create(model=vllm_engine.model, messages=messages, max_tokens=24)
                messages += [{"role": "assistant", "content": reply.choices[0].message.content or ""},
                             {"role": "user", "content": "Go on."}]  # fmt: skip
    finally:
        proxy.stop()
    calls = {f"s{index}": read_session(work / "out" / f"s{index}.jsonl") for index in range(SESSIONS)}
    assert all(call.ok and call.completion_logprobs for session in calls.values() for call in session), json.dumps(
        [c.error for s in calls.values() for c in s if not c.ok]
    )
    records = [
        RewardRecord(rollout_id=rollout, task_id="t", group_id="g", reward=float(i % 2), usable=True, status=RolloutStatus.OK)
        for i, rollout in enumerate(calls)
    ]
    data, stats = build_batch(calls, records, AlgorithmConfig())
    assert stats.trained_tokens > 0
    return data


def _gap(checkpoint: Path, data) -> dict[str, float]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    metrics = cpu_update(model, data, AlgorithmConfig(), seed=0)
    return {name: value for name, value in metrics.items() if "logprob_gap" in name}


def test_vllms_logprobs_agree_with_the_trainers_forward_pass_on_the_same_checkpoint(recorded_batch, tiny_model_dir):
    gap = _gap(tiny_model_dir, recorded_batch)

    print(f"vLLM (CPU build, float32) vs the trainer on {int(recorded_batch.batch['response_mask'].sum())} tokens: {gap}")
    assert gap["train/logprob_gap_max"] < TOLERANCE, gap


def test_the_gap_exposes_a_checkpoint_other_than_the_one_served(recorded_batch, tmp_path):
    other = init_tiny_model(tmp_path / "other", seed=1)

    gap = _gap(other, recorded_batch)

    assert gap["train/logprob_gap_mean"] > 100 * TOLERANCE, gap
