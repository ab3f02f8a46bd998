"""benchmarks/free_learning/replay.py: a stored batch replayed offline, scored by the teacher's sessions."""

from __future__ import annotations

import pytest
import torch

from benchmarks.free_learning.replay import parse_variant, replay, session_probabilities, task_of
from components.core.config import AlgorithmConfig
from components.core.outcome import RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall

LIMITS = (512, 512)


def _model() -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=128, tie_word_embeddings=True, pad_token_id=0,
    )  # fmt: skip
    return Qwen2ForCausalLM(config).float().eval()


def _call(session: str, prompt: list[int], completion: list[int]) -> RecordedCall:
    return RecordedCall(
        session_id=session, call_index=0, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=completion, completion_logprobs=[-0.5] * len(completion),
        sampling={"temperature": 1.0}, started_at=0.0, latency_ms=1.0, upstream_status=200,
    )  # fmt: skip


def test_a_tasks_probability_is_its_sessions_mean_product_of_token_probabilities() -> None:
    model = _model()
    sessions = {
        "0/count-words-s0": [_call("count-words-s0", [1, 2, 3], [4, 5])],
        "1/count-words-s3": [_call("count-words-s3", [1, 2, 3], [6, 7])],
        "0/sort-s1": [_call("sort-s1", [8, 9], [10])],
    }

    got = session_probabilities(model, sessions, pad_token_id=0, temperature=0.5, limits=LIMITS)

    def by_hand(tokens: list[int], prompt_length: int) -> float:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([tokens])).logits[0] / 0.5
        probs = torch.softmax(logits, dim=-1)
        return float(torch.prod(torch.stack([probs[i - 1, tokens[i]] for i in range(prompt_length, len(tokens))])))

    assert set(got) == {"count-words", "sort"}
    assert got["count-words"] == pytest.approx((by_hand([1, 2, 3, 4, 5], 3) + by_hand([1, 2, 3, 6, 7], 3)) / 2, rel=1e-4)
    assert got["sort"] == pytest.approx(by_hand([8, 9, 10], 2), rel=1e-4)
    assert task_of("12/fix-s3-bug-s0") == "fix-s3-bug"


def test_replaying_a_group_raises_the_rewarded_session_and_leaves_model_and_batch_as_they_were() -> None:
    from components.trainer.batch import build_batch
    from components.trainer.cpu_update import response_log_probs

    model = _model()
    passed, failed = _call("t-s0", [1, 2, 3], [4, 5, 6]), _call("t-s1", [1, 2, 3], [7, 8, 9])
    records = [
        RewardRecord(rollout_id=rid, task_id="t", group_id="it0-t", reward=r, usable=True, status=RolloutStatus.OK)
        for rid, r in (("t-s0", 1.0), ("t-s1", 0.0))
    ]
    base = AlgorithmConfig(learning_rate=1e-2)
    data, _ = build_batch({"t-s0": [passed], "t-s1": [failed]}, records, base)
    with torch.no_grad():  # on policy: the batch's behaviour log-probs are the model's own
        data.batch["rollout_log_probs"] = response_log_probs(model, data.batch, 1.0)[0] * data.batch["response_mask"]
    sessions = {"0/good-s0": [passed], "0/bad-s0": [failed]}

    def score(m: torch.nn.Module) -> dict[str, float]:
        return session_probabilities(m, sessions, pad_token_id=0, temperature=1.0, limits=LIMITS)

    weights, responses = {k: v.clone() for k, v in model.state_dict().items()}, data.batch["responses"].clone()
    before = score(model)
    results = replay(model, data, base, [{}, {"learning_rate": 1e-6}], score, seed=0)

    assert [changes for changes, _, _ in results] == [{}, {"learning_rate": 1e-6}]
    (_, moved, metrics), (_, still, _) = results
    assert moved["good"] > before["good"] * 1.2 and moved["bad"] < before["bad"]
    assert still["good"] == pytest.approx(before["good"], rel=1e-3)  # a step of 1e-6 barely moves it
    assert "train/loss" in metrics or any(k.startswith("actor/") for k in metrics)
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    assert torch.equal(data.batch["responses"], responses)


def test_a_variant_is_typed_by_the_config_and_a_wrong_name_is_refused() -> None:
    base = AlgorithmConfig()
    assert parse_variant("learning_rate=3e-4,epochs=8,loss_agg_mode=seq-mean-token-mean", base) == {
        "learning_rate": 3e-4, "epochs": 8, "loss_agg_mode": "seq-mean-token-mean",
    }  # fmt: skip
    with pytest.raises(SystemExit, match="lr=3e-4"):
        parse_variant("lr=3e-4", base)
    with pytest.raises(SystemExit, match=r"greater than or equal to 1 \(epochs=0\)"):
        parse_variant("epochs=0", base)
