"""veRL's own worker group for real, on CPU: the train step's veRL backend end to end.

``verl_update`` with ``trainer.device: cpu`` starts Ray with logical GPUs, veRL's
``ActorRolloutRefWorker`` processes (FSDP2 over gloo, bf16 compute) recompute the old
log-probs, make one update of the recorded batch, save their shards, and veRL's model
merger exports checkpoint 1. One run per world size (session fixtures in conftest.py);
the tests read them.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from tests.components.trainer.conftest import LOG_PPL_GAP_TOLERANCE, MIN_PROBS_CORRELATION, VerlCpuRun, teacher_gaps

# The first test to run sets up both session runs: ~90 s (one worker) and ~120 s (two) on
# an idle 2-core machine, over 300 s beside another pytest worker (CI saw the default
# 300 s limit expire in the second run's init_model).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PROMPT = torch.tensor([[1, 2, 3, 4, 5, 20, 21, 6, 7, 8]])


def test_one_worker_and_two_on_two_ray_nodes_make_the_same_update(
    verl_cpu_run_world1: VerlCpuRun, verl_cpu_run_world2: VerlCpuRun
):
    # trainer.nnodes 2 with one logical GPU per node: veRL's two placement groups (one per
    # node) can only land on different nodes, so the ranks talk across Ray nodes.
    assert (verl_cpu_run_world2.world, verl_cpu_run_world2.nnodes) == (2, 2)
    one, two = verl_cpu_run_world1.metrics, verl_cpu_run_world2.metrics
    # Same batch, same parent: sharding the two rows over two gloo ranks changes only the
    # order of bf16 reductions.
    for name in ("train/loss", "train/grad_norm", "train/kl"):
        assert two[name] == pytest.approx(one[name], rel=1e-2, abs=1e-4), name
    print(f"\nveRL on CPU: world 1 {verl_cpu_run_world1.seconds:.0f} s, 2 nodes of 1 {verl_cpu_run_world2.seconds:.0f} s")


def test_the_update_reports_finite_metrics_and_a_real_gradient(verl_cpu_run_world1: VerlCpuRun):
    metrics = verl_cpu_run_world1.metrics

    assert all(math.isfinite(value) for value in metrics.values()), {k: v for k, v in metrics.items() if not math.isfinite(v)}
    assert metrics["train/grad_norm"] > 0  # rewards 1 and 0: advantages +-0.707, a gradient
    assert metrics["train/loss"] != 0
    assert metrics["train/verl/actor/lr"] > 0
    # One update of the one mini-batch: veRL's PPO ratio starts at 1, nothing clipped.
    assert metrics["train/clip_frac"] == 0


def test_the_batch_carries_the_policys_own_logprobs(verl_cpu_run_world1: VerlCpuRun):
    """veRL's workers recompute the old log-probs (bf16) and compare them with the batch's:
    logprobs of the policy that trains agree to bf16 precision; made-up ones would not."""
    metrics, batch = verl_cpu_run_world1.metrics, verl_cpu_run_world1.batch
    sampled = batch.batch["rollout_log_probs"][batch.batch["response_mask"].bool()]

    assert len(set(sampled.tolist())) == len(sampled)  # per-token values, not a constant
    assert metrics["train/verl/training/rollout_probs_diff_valid"] == 1
    assert metrics["train/verl/training/rollout_actor_probs_pearson_corr"] > MIN_PROBS_CORRELATION  # measured 0.997
    # Mean |log-perplexity gap| per row, bf16 workers vs the fp32 policy: measured 0.0096
    # (the batch's made-up -0.5 per token would be ~7.6 on this random model).
    assert metrics["train/verl/rollout_corr/log_ppl_abs_diff"] < LOG_PPL_GAP_TOLERANCE
    assert 0.9 < metrics["train/verl/rollout_corr/rollout_is_min"] <= metrics["train/verl/rollout_corr/rollout_is_max"] < 1.1


def test_veRLs_workers_add_the_teachers_term_with_their_own_distillation_loss(verl_cpu_run_world1: VerlCpuRun):
    """The runs distill beside the reward (conftest.verl_cpu_config): veRL's workers compute
    the k1 term from their own (bf16) log-probs; at ratio 1 it is the mean gap the made-up
    teacher was given, 0.1 to 1.0 nats per token, as the CPU update's formula says."""
    metrics, batch = verl_cpu_run_world1.metrics, verl_cpu_run_world1.batch
    expected = float(teacher_gaps(batch)[batch.batch["response_mask"].bool()].mean())

    assert metrics["train/verl/actor/distillation/loss"] == pytest.approx(expected, abs=0.05)  # bf16 recompute
    assert 0 < metrics["train/verl/actor/distillation/abs_loss"] < 2


def test_the_exported_checkpoint_loads_in_the_dev_engine_with_changed_weights(verl_cpu_run_world1: VerlCpuRun):
    from transformers import AutoModelForCausalLM

    from components.engine._generation import ModelRunner
    from components.engine.server import policy_version_of

    run = verl_cpu_run_world1
    served = ModelRunner(run.checkpoint, threads=1)
    parent = AutoModelForCausalLM.from_pretrained(run.parent, dtype=torch.float32).eval()

    assert policy_version_of(run.checkpoint) == "1"
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (run.checkpoint / name).read_bytes() == (run.parent / name).read_bytes(), name
    assert json.loads((run.checkpoint / "config.json").read_text())["dtype"] == "bfloat16"  # what the merger writes
    assert not (run.checkpoint / "lora_adapter").exists()
    with torch.no_grad():
        after, before = served.model(input_ids=PROMPT).logits, parent(input_ids=PROMPT).logits
    assert torch.isfinite(after).all()
    # Beyond bf16 rounding of the parent: the update moved the weights.
    rounded = {k: v.to(torch.bfloat16).float() for k, v in parent.state_dict().items()}
    changed = [k for k, v in served.model.state_dict().items() if k in rounded and not torch.equal(v.float(), rounded[k])]
    assert changed, "every exported weight equals the parent's (rounded to bf16): the update did nothing"
    assert not torch.allclose(after, before, atol=1e-3)
