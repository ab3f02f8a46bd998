"""Siblings' shared prompt runs once per micro-batch in the CPU update: the same log-probs,
loss and updated weights as row by row, and the prefix counted once against the token cap."""

from __future__ import annotations

import pytest
import torch

from components.core.config import AlgorithmConfig
from components.trainer.batch import build_batch
from components.trainer.cpu_update import cpu_update, micro_batches, response_log_probs
from components.trainer.shared_prefix import MIN_SHARED, shared_prefix_length

ALGORITHM = AlgorithmConfig(learning_rate=1e-2, micro_batch_size=8)
PREFIX = [(7 * i) % 50 + 10 for i in range(MIN_SHARED + 88)]  # a harness's system prompt, in small


@pytest.fixture
def siblings(call, record, tiny_model_dir):
    """Three rows of one task (the same long prompt, then tails and answers of their own,
    one of them two turns), and a row of another task; on-policy."""
    from transformers import AutoModelForCausalLM

    calls = {
        "t-s0": [call(0, PREFIX + [5, 6], [7, 8, 9])],
        "t-s1": [call(0, PREFIX + [5, 6, 11, 12], [13], session="t-s1"),
                 call(1, PREFIX + [5, 6, 11, 12, 13, 60, 61], [62, 63], session="t-s1")],
        "t-s2": [call(0, PREFIX + [30], [31, 32], session="t-s2")],
        "u-s0": [call(0, [59, 58, 57], [56], session="u-s0")],
    }  # fmt: skip
    records = [record("t-s0", 1.0), record("t-s1", 0.0), record("t-s2", 1.0), record("u-s0", 0.0)]
    data, _ = build_batch(calls, records, ALGORITHM)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    with torch.no_grad():
        log_prob, _ = response_log_probs(model, data.batch, temperature=1.0)
    data.batch["rollout_log_probs"] = log_prob * data.batch["response_mask"]
    return data


def _rows_of(micro):
    return len(micro["responses"])


def _cap(batch) -> int:
    """Room for one copy of the prefix and three rows' own tokens, far from three whole rows."""
    prompt_width = batch["prompts"].shape[1]
    widest = int(batch["attention_mask"][:, :prompt_width].sum(1).max() + batch["attention_mask"][:, prompt_width:].sum(1).max())
    return len(PREFIX) + 3 * (widest - len(PREFIX))


def test_the_common_prefix_leaves_every_row_its_last_prompt_token() -> None:
    ids = torch.tensor
    assert shared_prefix_length([ids([1, 2, 3, 4]), ids([1, 2, 3, 5]), ids([1, 2, 9])]) == 2
    assert shared_prefix_length([ids([1, 2, 3]), ids([1, 2, 3, 4])]) == 2  # not the whole first prompt
    assert shared_prefix_length([ids([1, 2, 3])]) == 0


def test_siblings_share_a_micro_batch_and_their_prefix_counts_once(siblings) -> None:
    batch = siblings.batch
    prompts = batch["attention_mask"][:, : batch["prompts"].shape[1]].sum(1).tolist()
    task_rows = [i for i, p in enumerate(prompts) if p > len(PREFIX)]
    assert len(task_rows) == 3 and task_rows == list(range(task_rows[0], task_rows[0] + 3))  # siblings adjacent
    cap = _cap(batch)
    assert cap < 2 * len(PREFIX)
    micros = micro_batches(batch, micro_size=8, max_tokens=cap)
    shared = [m for m in micros if m["shared_prefix"]]
    assert len(shared) == 1 and _rows_of(shared[0]) == 3 and shared[0]["shared_prefix"] == len(PREFIX)


def test_log_probs_through_the_shared_prefix_equal_the_whole_rows(siblings, tiny_model_dir) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    batch = siblings.batch
    micros = micro_batches(batch, micro_size=8, max_tokens=_cap(batch))
    assert any(m["shared_prefix"] for m in micros)
    with torch.no_grad():
        for micro in micros:
            shared, _ = response_log_probs(model, micro, temperature=1.0)
            whole, _ = response_log_probs(model, {**micro, "shared_prefix": 0}, temperature=1.0)
            mask = micro["response_mask"].bool()
            assert torch.allclose(shared[mask], whole[mask], atol=1e-5)


def test_the_update_through_a_shared_prefix_equals_row_by_row(siblings, tiny_model_dir) -> None:
    from transformers import AutoModelForCausalLM

    def updated(**settings):
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
        metrics = cpu_update(model, siblings, ALGORITHM.model_copy(update=settings), seed=0)
        return metrics["train/loss"], metrics["train/grad_norm"], [p.detach().clone() for p in model.parameters()]

    loss_a, norm_a, a = updated(micro_batch_tokens=_cap(siblings.batch))  # the siblings together, prefix once
    loss_b, norm_b, b = updated(micro_batch_size=1)  # every row alone
    assert loss_a == pytest.approx(loss_b, abs=1e-6) and norm_a == pytest.approx(norm_b, rel=1e-4)
    # As in test_cpu_update: summation order moves updated weights by ~1e-6; a wrong
    # gradient through the shared keys and values would move them by ~lr.
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(a, b))
