"""RecordedBatchTrainer: veRL's RayPPOTrainer stages on the recorded batch.

On a CPU the actor worker group is the in-process stand-in (``_verl_worker``), so the
trainer's own logic runs for real: veRL's ``_compute_old_log_prob``, rollout correction
and ``_update_actor`` with one mini-batch of all rows. The same step with Ray and FSDP
workers is the GPU test at the end.
"""

from __future__ import annotations

import pytest
import torch
from tests.components.trainer._verl_worker import InProcessActor

from components.core.config import ExperimentConfig
from components.trainer.batch import build_batch
from components.trainer.cpu_update import response_log_probs
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
def on_policy_batch(two_turn_group, model):
    calls, records = two_turn_group
    data, _ = build_batch(calls, records, _config().algorithm)
    with torch.no_grad():
        log_prob, _ = response_log_probs(model, data.batch, temperature=1.0)
    data.batch["rollout_log_probs"] = log_prob * data.batch["response_mask"]
    return data


def test_the_trainer_is_verls_ray_ppo_trainer_with_one_step_and_no_dataset(policy_dir, tmp_path):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    trainer = _trainer(policy_dir, tmp_path)

    assert isinstance(trainer, RayPPOTrainer)
    assert trainer.total_training_steps == 1
    assert trainer.config.actor_rollout_ref.actor.optim.total_training_steps == 1
    assert not trainer.use_critic and not trainer.use_reference_policy and not trainer.use_rm


@pytest.mark.parametrize("bypass", [False, True], ids=["decoupled", "bypass"])
def test_train_step_runs_verls_stages_as_one_update_of_all_rows(policy_dir, tmp_path, model, on_policy_batch, bypass):
    trainer = _trainer(policy_dir, tmp_path, rollout_correction={"bypass_mode": bypass})
    worker = InProcessActor(model, trainer.config)
    trainer.actor_rollout_wg, trainer.distillation_config, trainer.global_steps = worker, None, 1

    metrics = trainer.train_step(on_policy_batch)

    assert worker.mini_batch_sizes == [2]  # one optimizer step over every row
    assert worker.log_prob_calls == (0 if bypass else 1)  # bypass trains against the recorded logprobs
    assert metrics["actor/pg_loss"] == pytest.approx(worker.losses[0])
    assert any(name.startswith("rollout_corr/") for name in metrics) is (not bypass)
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
