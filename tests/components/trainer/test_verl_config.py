"""Our experiment config composed into veRL's own packaged PPO config, and validated by veRL."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.core.config import ExperimentConfig
from components.trainer.rows import TemperatureMismatchError
from components.trainer.verl_config import (
    VerlConfigError,
    check_sampling_matches,
    micro_batch_rows,
    trainer_verl_config,
    verl_overrides,
)

ROWS = 8


def _config(**sections) -> ExperimentConfig:
    trainer = {"backend": "verl", **sections.pop("trainer", {})}
    # The train pod requests the GPUs its workers take (components/core/cluster_fit.py).
    cluster = {"resources": {"train": {"cpu": "8", "memory": "64Gi", "gpu": trainer.get("n_gpus_per_node", 1)}}}
    return ExperimentConfig(name="unit", tasks={"source": "tasks"}, trainer=trainer, cluster=cluster, **sections)


def _compose(config: ExperimentConfig, rows: int = ROWS):
    return trainer_verl_config(config, model_path="/models/v0", output_dir="/tmp/out", rows=rows)


@pytest.fixture(scope="module")
def composed():
    return _compose(_config(rollout={"samples_per_task": 6}))


def test_our_defaults_compose_into_grpo_with_kl_off_and_token_is_correction(composed):
    actor = composed.actor_rollout_ref.actor
    correction = composed.algorithm.rollout_correction

    assert composed.algorithm.adv_estimator == "grpo" and composed.algorithm.norm_adv_by_std_in_grpo is True
    assert composed.actor_rollout_ref.rollout.n == 6  # the GRPO group size
    assert (actor.use_kl_loss, composed.algorithm.use_kl_in_reward, composed.critic.enable) == (False, False, False)
    assert (actor.clip_ratio, actor.clip_ratio_low, actor.clip_ratio_high) == (0.2, 0.2, 0.2)
    assert actor.loss_agg_mode == "token-mean" and actor.policy_loss.loss_mode == "vanilla"
    assert (correction.bypass_mode, correction.rollout_is, correction.rollout_is_threshold) == (False, "token", 2.0)
    assert correction.rollout_rs is None and correction.loss_type == "ppo_clip"
    assert composed.actor_rollout_ref.rollout.temperature == 1.0
    assert (actor.optim.lr, actor.ppo_epochs, actor.ppo_micro_batch_size_per_gpu) == (1e-4, 1, 8)
    assert actor.ppo_mini_batch_size == composed.data.train_batch_size == ROWS  # one update per iteration
    assert composed.actor_rollout_ref.model.path == "/models/v0" and composed.actor_rollout_ref.model.lora_rank == 0


def test_composed_sections_become_verls_typed_configs(composed):
    from verl.trainer.config import AlgoConfig
    from verl.utils.config import omega_conf_to_dataclass

    algorithm = omega_conf_to_dataclass(composed.algorithm)
    actor = omega_conf_to_dataclass(composed.actor_rollout_ref.actor)

    # veRL reads rollout_correction with .get(): it stays a mapping inside AlgoConfig.
    assert isinstance(algorithm, AlgoConfig) and algorithm.rollout_correction["rollout_is"] == "token"
    assert actor.rollout_n == 6 and actor.strategy == "fsdp2"


DISTILLING = {"distillation": {"teacher_model": "/models/teacher", "weight": 0.5}}


@pytest.mark.parametrize("algorithm", [{}, DISTILLING], ids=["grpo", "distillation"])
def test_every_key_we_set_exists_in_verls_generated_config(algorithm):
    import verl

    generated = yaml.safe_load((Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml").read_text())
    missing = []
    for override in verl_overrides(_config(algorithm=algorithm), model_path="/m", output_dir="/o", rows=ROWS):
        node = generated
        for part in override.split("=", 1)[0].split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(override)
                break
            node = node[part]

    assert missing == []  # a renamed veRL key would silently be added instead of set


def test_user_overrides_win_and_reach_any_verl_key():
    overrides = ["actor_rollout_ref.actor.clip_ratio_high=0.28", "actor_rollout_ref.actor.fsdp_config.param_offload=true"]

    composed = _compose(_config(trainer={"overrides": overrides}))

    assert composed.actor_rollout_ref.actor.clip_ratio_high == 0.28
    assert composed.actor_rollout_ref.actor.fsdp_config.param_offload is True
    assert composed.actor_rollout_ref.actor.clip_ratio_low == 0.2


def test_an_unknown_verl_key_is_refused_with_the_fix():
    with pytest.raises(VerlConfigError, match="trainer.overrides"):
        _compose(_config(trainer={"overrides": ["actor_rollout_ref.actor.no_such_knob=1"]}))


def test_bypass_mode_is_in_the_config_the_workers_receive():
    from verl.utils.config import omega_conf_to_dataclass

    composed = _compose(_config(trainer={"rollout_correction": {"bypass_mode": True}}))
    actor = omega_conf_to_dataclass(composed.actor_rollout_ref.actor)

    assert actor.policy_loss.loss_mode == "bypass_mode"
    assert actor.policy_loss.rollout_correction["bypass_mode"] is True


def test_kl_coefficient_turns_on_the_kl_loss_and_the_reference_policy():
    from verl.trainer.ppo.utils import need_reference_policy

    composed = _compose(_config(algorithm={"kl_coef": 0.05}))

    assert composed.actor_rollout_ref.actor.use_kl_loss is True
    assert composed.actor_rollout_ref.actor.kl_loss_coef == 0.05
    assert need_reference_policy(composed)


def test_micro_batches_divide_each_ranks_rows_and_stay_under_the_limit():
    # veRL's FSDP engine asserts rows per rank % micro-batch rows == 0.
    assert micro_batch_rows(8, 16) == 8
    assert micro_batch_rows(8, 5) == 5  # fewer rows than the limit: one pass
    assert micro_batch_rows(4, 6) == 3
    assert micro_batch_rows(4, 7) == 1  # a prime count: one row at a time
    composed = _compose(_config(algorithm={"micro_batch_size": 4}, trainer={"n_gpus_per_node": 2}), rows=12)
    assert composed.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu == 3
    assert composed.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu == 3


def test_workers_on_cpu_use_sdpa_attention():
    composed = _compose(_config(trainer={"device": "cpu"}))

    assert composed.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"  # flash-attn is CUDA-only
    assert "attn_implementation" not in _compose(_config()).actor_rollout_ref.model.override_config


def test_a_batch_that_does_not_divide_the_world_size_is_refused():
    with pytest.raises(VerlConfigError, match="multiple of the world size 2"):
        trainer_verl_config(_config(trainer={"n_gpus_per_node": 2}), model_path="/m", output_dir="/o", rows=3)


def test_a_batch_sampled_at_another_temperature_names_both_values(composed):
    with pytest.raises(TemperatureMismatchError, match=r"temperature 0\.7 .*rollout\.temperature 1\.0"):
        check_sampling_matches(0.7, composed)


def test_an_override_that_changes_the_training_temperature_is_caught():
    composed = _compose(_config(trainer={"overrides": ["actor_rollout_ref.rollout.temperature=0.6"]}))

    with pytest.raises(TemperatureMismatchError, match=r"sampled at temperature 1\.0 .*rollout\.temperature 0\.6"):
        check_sampling_matches(1.0, composed)


@pytest.mark.parametrize("verifier_reward", [True, False])
def test_distillation_becomes_verls_own_k1_policy_gradient_loss_with_an_empty_teacher_pool(verifier_reward):
    from verl.utils.config import omega_conf_to_dataclass

    distillation = {"teacher_model": "/models/teacher", "clamp": 7.0, "verifier_reward": verifier_reward}
    if verifier_reward:
        distillation["weight"] = 0.5
    composed = _compose(_config(algorithm={"distillation": distillation, "clip_ratio": 0.3}))
    # veRL's own validation: the teacher pool (0 nodes) holds the one recorded teacher's 0 replicas.
    typed = omega_conf_to_dataclass(composed.distillation)
    loss = typed.distillation_loss

    assert typed.enabled and typed.teacher_models["default"].model_path == "/models/teacher"
    assert typed.teacher_models["default"].num_replicas == 0
    assert (loss.loss_mode, loss.use_policy_gradient, loss.policy_loss_mode) == ("k1", True, "vanilla")
    assert loss.use_task_rewards is verifier_reward
    assert loss.distillation_loss_coef == (0.5 if verifier_reward else 1.0)
    assert (loss.loss_max_clamp, loss.clip_ratio_low, loss.clip_ratio_high) == (7.0, 0.3, 0.3)


def test_without_distillation_veRLs_stays_off():
    assert _compose(_config()).distillation.enabled is False
