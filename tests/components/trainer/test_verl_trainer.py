"""RecordedBatchTrainer: veRL's RayPPOTrainer stages on the recorded batch.

The default (decoupled) step with veRL's real workers, Ray and FSDP on CPU, is
``test_verl_workers_cpu.py``. Here the worker group is the in-process stand-in
(``_verl_worker``) for what that run cannot show cheaply: bypass mode skipping the
old-log-prob pass (one more real run, minutes on 2 cores), and what the trainer hands its
workers (one mini-batch of every row), which is not visible from outside them.
"""

from __future__ import annotations

import pytest
import torch
from tests.components.trainer._verl_worker import InProcessActor
from tests.components.trainer.conftest import (
    LOG_PPL_GAP_TOLERANCE,
    MIN_PROBS_CORRELATION,
    build_on_policy_batch,
    teacher_gaps,
    with_teacher_scores,
)

from components.core.config import ExperimentConfig
from components.trainer.verl_config import trainer_verl_config
from components.trainer.verl_trainer import build_trainer, update_batch


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    from components.engine.tiny_model import init_tiny_model

    return init_tiny_model(tmp_path_factory.mktemp("policy") / "v0", seed=2)


def _config(**trainer) -> ExperimentConfig:
    return ExperimentConfig(name="unit", tasks={"source": "t"}, trainer={"backend": "verl", **trainer})


def _trainer(policy_dir, tmp_path, rows: int = 2, **trainer):
    verl_config = trainer_verl_config(_config(**trainer), model_path=policy_dir, output_dir=tmp_path / "fsdp", rows=rows)
    return build_trainer(verl_config)


@pytest.fixture
def model(policy_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(policy_dir, dtype=torch.float32)


@pytest.fixture
def on_policy_batch(policy_dir):
    return build_on_policy_batch(policy_dir, _config())


def test_the_trainer_is_verls_ray_ppo_trainer_with_one_step_and_no_dataset(policy_dir, tmp_path):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    trainer = _trainer(policy_dir, tmp_path)

    assert isinstance(trainer, RayPPOTrainer)
    assert trainer.total_training_steps == 1
    assert trainer.config.actor_rollout_ref.actor.optim.total_training_steps == 1
    assert not trainer.use_critic and not trainer.use_reference_policy and not trainer.use_rm


def test_bypass_mode_trains_against_the_recorded_logprobs_in_one_update_of_all_rows(
    policy_dir, tmp_path, model, on_policy_batch
):
    trainer = _trainer(policy_dir, tmp_path, rollout_correction={"bypass_mode": True})
    worker = InProcessActor(model, trainer.config)
    trainer.actor_rollout_wg, trainer.distillation_config, trainer.global_steps = worker, None, 1

    metrics = trainer.train_step(on_policy_batch)

    assert worker.mini_batch_sizes == [2]  # one optimizer step over every row
    assert worker.log_prob_calls == 0  # no old-log-prob pass: the recorded logprobs are the old policy
    assert metrics["actor/pg_loss"] == pytest.approx(worker.losses[0])
    assert not any(name.startswith("rollout_corr/") for name in metrics)  # no IS weights in bypass
    assert trainer.config.actor_rollout_ref.rollout.n == 4  # the group size is restored after the update


def _distilling(verifier_reward: bool = True) -> ExperimentConfig:
    distillation = {"teacher_model": "scored-in-the-batch", "verifier_reward": verifier_reward}
    if verifier_reward:
        distillation["weight"] = 0.5
    return ExperimentConfig(
        name="unit", tasks={"source": "t"}, trainer={"backend": "verl"}, algorithm={"distillation": distillation}
    )


def _distilled_batch(policy_dir, config: ExperimentConfig):
    return with_teacher_scores(build_on_policy_batch(policy_dir, config), config)


def test_the_teachers_scores_reach_veRL_in_its_own_layout_beside_the_rewards_advantage(policy_dir, tmp_path):
    config = _distilling()
    batch = _distilled_batch(policy_dir, config)
    verl_config = trainer_verl_config(config, model_path=policy_dir, output_dir=tmp_path, rows=2)

    ready = update_batch(batch, verl_config, world_size=1)

    tensors, stored = ready.batch, batch.batch
    width = stored["prompts"].shape[1]
    responses = stored["responses"].shape[1]
    # Position i holds the teacher's log-prob of token i+1, as veRL's vLLM teacher client writes them.
    assert torch.equal(tensors["teacher_logprobs"][:, width - 1 : width - 1 + responses, 0], stored["teacher_log_probs"])
    assert torch.equal(tensors["teacher_ids"][:, :-1, 0], tensors["input_ids"][:, 1:])
    # veRL adds the teacher's term itself: the advantage it gets is the reward's alone.
    assert torch.equal(tensors["advantages"], stored["reward_advantages"] * stored["response_mask"])
    assert not torch.equal(stored["advantages"], tensors["advantages"])
    assert "teacher_log_probs" not in tensors.keys() and "reward_advantages" not in tensors.keys()


def test_a_batch_and_a_veRL_config_that_disagree_on_distillation_are_refused(policy_dir, tmp_path):
    scored = _distilled_batch(policy_dir, _distilling())
    unscored = build_on_policy_batch(policy_dir, _config())

    plain = trainer_verl_config(_config(), model_path=policy_dir, output_dir=tmp_path, rows=2)
    distilling = trainer_verl_config(_distilling(), model_path=policy_dir, output_dir=tmp_path, rows=2)

    with pytest.raises(ValueError, match="carries the teacher's scores but veRL's distillation is off"):
        update_batch(scored, plain, world_size=1)
    with pytest.raises(ValueError, match="no teacher scores"):
        update_batch(unscored, distilling, world_size=1)


@pytest.mark.parametrize("verifier_reward", [True, False], ids=["beside-the-reward", "pure"])
def test_veRLs_distillation_loss_is_the_cpu_updates_formula(policy_dir, tmp_path, model, verifier_reward):
    """veRL's own ``distillation_ppo_loss`` (k1 as a policy gradient) on its layout, and the CPU
    update on the advantage with the teacher's term folded in: the same loss (docs/trainer.md)."""
    from transformers import AutoModelForCausalLM
    from verl.utils.config import omega_conf_to_dataclass

    from components.trainer.cpu_update import cpu_update

    config = _distilling(verifier_reward)
    batch = _distilled_batch(policy_dir, config)
    cpu_model = AutoModelForCausalLM.from_pretrained(policy_dir, dtype=torch.float32)
    cpu = cpu_update(cpu_model, batch, config.algorithm, seed=0)
    trainer = build_trainer(trainer_verl_config(config, model_path=policy_dir, output_dir=tmp_path, rows=len(batch)))
    worker = InProcessActor(model, trainer.config)
    trainer.actor_rollout_wg, trainer.global_steps = worker, 1
    trainer.distillation_config = omega_conf_to_dataclass(trainer.config.distillation)  # as init_workers sets it

    trainer.train_step(batch)

    terms, sampled = worker.loss_terms[0], batch.batch["response_mask"].bool()
    # At ratio 1 the k1 policy-gradient loss is the mean of log p_student - log p_teacher.
    assert terms["distillation/loss"] == pytest.approx(float(teacher_gaps(batch)[sampled].mean()), abs=1e-4)
    if verifier_reward:
        veRL_loss = terms["actor/pg_loss"] + 0.5 * terms["distillation/loss"]
    else:  # veRL still reports the reward's loss (actor/pg_loss) but leaves it out of the total
        veRL_loss = terms["distillation/loss"]
    assert veRL_loss == pytest.approx(cpu["train/loss"], abs=1e-4)
    assert worker.losses[0] == pytest.approx(veRL_loss, abs=1e-6)


@pytest.mark.gpu
def test_one_veRL_update_on_gpu_exports_a_checkpoint_the_dev_engine_serves(policy_dir, tmp_path):
    """veRL's workers on a GPU, from the policy's own fp32 logprobs (as the engines record them):
    a finite loss, a recompute within the tolerance docs/trainer.md states, and weights moved
    past bf16 rounding in the checkpoint the dev engine then loads."""
    import math

    from transformers import AutoModelForCausalLM

    from components.engine._generation import ModelRunner
    from components.engine.server import policy_version_of
    from components.trainer.verl_step import verl_update

    # A learning rate that moves weights past bf16 rounding in one step, as the CPU worker runs use.
    config = ExperimentConfig(name="unit", tasks={"source": "t"}, algorithm={"learning_rate": 1e-3},
                              trainer={"backend": "verl"})  # fmt: skip
    batch = build_on_policy_batch(policy_dir, config)

    metrics, checkpoint = verl_update(config, batch, policy_dir, tmp_path, {"policy_version": "1"})

    assert math.isfinite(metrics["train/loss"]) and metrics["train/grad_norm"] > 0
    assert metrics["train/verl/training/rollout_probs_diff_valid"] == 1
    assert metrics["train/verl/training/rollout_actor_probs_pearson_corr"] > MIN_PROBS_CORRELATION
    assert metrics["train/verl/rollout_corr/log_ppl_abs_diff"] < LOG_PPL_GAP_TOLERANCE
    assert policy_version_of(checkpoint) == "1"
    served = ModelRunner(checkpoint, threads=1)  # loads: config, bf16 weights, the parent's tokenizer
    parent = AutoModelForCausalLM.from_pretrained(policy_dir, dtype=torch.float32)
    rounded = {k: v.to(torch.bfloat16).float() for k, v in parent.state_dict().items()}
    changed = [k for k, v in served.model.state_dict().items() if k in rounded and not torch.equal(v.float(), rounded[k])]
    assert changed, "every exported weight equals the parent's (rounded to bf16): the update did nothing"
