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
from tests.components.trainer.conftest import build_on_policy_batch

from components.core.config import ExperimentConfig
from components.trainer.batch import build_batch
from components.trainer.verl_config import trainer_verl_config
from components.trainer.verl_trainer import build_trainer


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


@pytest.mark.gpu
def test_one_veRL_update_on_gpu_exports_a_checkpoint_the_dev_engine_serves(policy_dir, tmp_path, two_turn_group):
    from components.engine._generation import ModelRunner
    from components.engine.server import policy_version_of
    from components.trainer.verl_step import verl_update

    calls, records = two_turn_group
    config = _config()
    data, _ = build_batch(calls, records, config.algorithm)

    metrics, checkpoint = verl_update(config, data, policy_dir, tmp_path, {"policy_version": "1"})

    assert {"train/loss", "train/grad_norm"} <= set(metrics)
    assert policy_version_of(checkpoint) == "1"
    ModelRunner(checkpoint, threads=1)  # loads: config, bf16 weights, the parent's tokenizer
