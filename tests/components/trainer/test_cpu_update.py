"""The CPU update: veRL's loss, zero gradient through context tokens, a loss that goes down."""

from __future__ import annotations

import pytest
import torch

from components.core.config import AlgorithmConfig
from components.trainer.batch import build_batch
from components.trainer.cpu_update import UpdateError, actor_config, cpu_update, policy_loss, response_log_probs

ALGORITHM = AlgorithmConfig(learning_rate=1e-2, micro_batch_size=1)


@pytest.fixture
def model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)


@pytest.fixture
def on_policy_batch(two_turn_group, model):
    """The two-turn batch with the recorded logprobs replaced by the model's own (on-policy)."""
    calls, records = two_turn_group
    data, _ = build_batch(calls, records, ALGORITHM)
    with torch.no_grad():
        log_prob, _ = response_log_probs(model, data.batch, temperature=1.0)
    data.batch["rollout_log_probs"] = log_prob * data.batch["response_mask"]
    return data


def _context(batch):
    """Real response tokens the policy did not sample (tool output), padding excluded."""
    prompt_width = batch["prompts"].shape[1]
    context = (batch["response_mask"] == 0) & (batch["attention_mask"][:, prompt_width:] == 1)
    assert context.sum() == 2  # the tool output [20, 21] of the two-turn rollout
    return context


def _loss(model, data, algorithm=ALGORITHM):
    config = actor_config(algorithm, len(data))
    mask = data.batch["response_mask"]
    config.global_batch_info.update(dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=len(data))
    log_prob, entropy = response_log_probs(model, data.batch, temperature=1.0)
    return policy_loss(log_prob, entropy, data.batch, config)[0]


def test_context_positions_get_exactly_zero_gradient(on_policy_batch):
    batch = on_policy_batch.batch
    config = actor_config(ALGORITHM, len(on_policy_batch))
    config.global_batch_info.update(dp_size=1, batch_num_tokens=int(batch["response_mask"].sum()), global_batch_size=2)
    log_prob = (batch["rollout_log_probs"] + 0.1).requires_grad_(True)

    policy_loss(log_prob, torch.zeros_like(log_prob), batch, config)[0].backward()

    context = _context(batch)
    assert torch.all(log_prob.grad[context] == 0)
    assert torch.all(log_prob.grad[batch["response_mask"] == 1] != 0)


def test_perturbing_context_logprobs_and_advantages_leaves_parameter_gradients_unchanged(model, on_policy_batch):
    def grads(data):
        model.zero_grad()
        _loss(model, data).backward()
        return [p.grad.clone() for p in model.parameters()]

    before = grads(on_policy_batch)
    perturbed = on_policy_batch.select(deepcopy=True)
    context = _context(perturbed.batch)
    perturbed.batch["rollout_log_probs"][context] = -7.0
    perturbed.batch["advantages"][context] = 5.0

    after = grads(perturbed)

    assert all(torch.equal(a, b) for a, b in zip(before, after))


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_one_update_decreases_the_loss(model, on_policy_batch, agg):
    algorithm = ALGORITHM.model_copy(update={"loss_agg_mode": agg})
    with torch.no_grad():
        before = float(_loss(model, on_policy_batch, algorithm))

    metrics = cpu_update(model, on_policy_batch, algorithm, seed=0)

    with torch.no_grad():
        after = float(_loss(model, on_policy_batch, algorithm))
    assert after < before
    assert metrics["train/loss"] == pytest.approx(before, abs=1e-6)
    assert set(metrics) == {"train/loss", "train/kl", "train/clip_frac", "train/entropy", "train/grad_norm"}
    assert abs(metrics["train/kl"]) < 1e-5  # on-policy: recorded and recomputed logprobs agree


def test_update_is_deterministic(tiny_model_dir, on_policy_batch):
    from transformers import AutoModelForCausalLM

    def updated():
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
        metrics = cpu_update(model, on_policy_batch, ALGORITHM, seed=3)
        return metrics, [p.detach().clone() for p in model.parameters()]

    (m1, w1), (m2, w2) = updated(), updated()

    assert m1 == m2
    assert all(torch.equal(a, b) for a, b in zip(w1, w2))


def test_kl_penalty_is_refused_with_the_fix(model, on_policy_batch):
    with pytest.raises(UpdateError, match="kl_coef"):
        cpu_update(model, on_policy_batch, AlgorithmConfig(kl_coef=0.1), seed=0)
