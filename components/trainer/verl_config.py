"""Our experiment config as veRL's Hydra PPO config: the one place the two meet.

The train step composes veRL's own packaged ``verl/trainer/config/ppo_trainer.yaml``
(what ``python -m verl.trainer.main_ppo`` reads) with Hydra, applying the overrides
below and then ``trainer.overrides`` from the experiment config, so any veRL key can be
set and the user's value wins. The result goes through veRL's ``validate_config``.

| ours | veRL |
|---|---|
| algorithm.name grpo | algorithm.adv_estimator=grpo |
| algorithm.norm_adv_by_std | algorithm.norm_adv_by_std_in_grpo |
| algorithm.kl_coef | actor.use_kl_loss (> 0), actor.kl_loss_coef; algorithm.use_kl_in_reward=false |
| algorithm.clip_ratio | actor.clip_ratio, clip_ratio_low, clip_ratio_high |
| algorithm.loss_agg_mode | actor.loss_agg_mode |
| algorithm.learning_rate | actor.optim.lr (constant schedule, no warm-up: one step per iteration) |
| algorithm.epochs | actor.ppo_epochs |
| algorithm.micro_batch_size (at most; a divisor of the rows per rank) | actor.ppo_micro_batch_size_per_gpu, rollout/ref.log_prob_micro_batch_size_per_gpu |
| algorithm.temperature | rollout.temperature (veRL scales logits by it when it recomputes log-probs) |
| algorithm.max_prompt/response_tokens | data.max_prompt_length, data.max_response_length |
| rollout.samples_per_task | rollout.n (the GRPO group size) |
| trainer.rollout_correction.* | algorithm.rollout_correction.* (same names) |
| trainer.lora | model.lora_rank, lora_alpha, target_modules |
| trainer.n_gpus_per_node, nnodes, strategy | trainer.n_gpus_per_node, trainer.nnodes, actor.strategy |
| trainer.device cpu | model.override_config.attn_implementation=sdpa (flash-attn is CUDA-only) |
| the batch's row count | data.train_batch_size, actor.ppo_mini_batch_size (one update per iteration) |

Everything else keeps veRL's default (AdamW, weight decay 0.01, grad clip 1.0, bf16
compute with fp32 master weights, entropy coefficient 0, no critic).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from components.core.config import ExperimentConfig
from components.trainer.rows import TemperatureMismatchError

VERL_CONFIG_NAME = "ppo_trainer"
_ACTOR = "actor_rollout_ref.actor"
_ROLLOUT = "actor_rollout_ref.rollout"
_MODEL = "actor_rollout_ref.model"


class VerlConfigError(ValueError):
    """Our config and veRL's disagree, or veRL refuses the composed config; the message says what to change."""


def _hydra_value(value: Any) -> str:
    """A Python value as Hydra override text (strings quoted, so paths with '=' or ',' survive)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_hydra_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def micro_batch_rows(limit: int, rows_per_rank: int) -> int:
    """Rows per forward/backward pass on one rank: the largest divisor of ``rows_per_rank``
    that is at most ``limit`` (``algorithm.micro_batch_size``).

    With fixed-size micro-batches veRL's FSDP engine asserts that each rank's rows divide
    into whole micro-batches (``prepare_micro_batches``); a batch of 5 rows per rank and
    micro-batches of 8 would stop the step. A prime row count runs one row at a time.
    """
    return max(d for d in range(1, min(limit, rows_per_rank) + 1) if rows_per_rank % d == 0)


def verl_overrides(config: ExperimentConfig, *, model_path: str | Path, output_dir: str | Path, rows: int) -> list[str]:
    """Our settings as veRL Hydra overrides, before ``config.trainer.overrides``.

    ``rows`` is the row count of this iteration's batch after padding to the world size:
    one mini-batch of all rows gives exactly one optimizer step per epoch.
    """
    algorithm, trainer = config.algorithm, config.trainer
    correction = trainer.rollout_correction
    micro = micro_batch_rows(algorithm.micro_batch_size, rows // trainer.world_size)
    max_prompt, max_response = algorithm.row_limits(config.engine.max_model_len)
    settings: dict[str, Any] = {
        "algorithm.adv_estimator": algorithm.name,
        "algorithm.norm_adv_by_std_in_grpo": algorithm.norm_adv_by_std,
        "algorithm.use_kl_in_reward": False,
        "critic.enable": False,  # GRPO: the group is the baseline
        **{f"algorithm.rollout_correction.{k}": v for k, v in correction.model_dump().items()},
        f"{_ACTOR}.strategy": trainer.strategy,
        f"{_ACTOR}.optim.lr": algorithm.learning_rate,
        f"{_ACTOR}.optim.lr_warmup_steps_ratio": 0.0,
        f"{_ACTOR}.clip_ratio": algorithm.clip_ratio,
        f"{_ACTOR}.clip_ratio_low": algorithm.clip_ratio,
        f"{_ACTOR}.clip_ratio_high": algorithm.clip_ratio,
        f"{_ACTOR}.loss_agg_mode": algorithm.loss_agg_mode,
        f"{_ACTOR}.use_kl_loss": algorithm.kl_coef > 0,
        f"{_ACTOR}.kl_loss_coef": algorithm.kl_coef,
        f"{_ACTOR}.entropy_coeff": 0.0,
        f"{_ACTOR}.ppo_epochs": algorithm.epochs,
        f"{_ACTOR}.ppo_mini_batch_size": rows,
        f"{_ACTOR}.ppo_micro_batch_size_per_gpu": micro,
        f"{_ACTOR}.ppo_max_token_len_per_gpu": trainer.max_token_len_per_gpu,
        f"{_ACTOR}.use_dynamic_bsz": False,
        f"{_ACTOR}.shuffle": False,
        f"{_ACTOR}.checkpoint.save_contents": ["model"],  # the merger needs the shards, nothing else
        f"{_ACTOR}.checkpoint.load_contents": ["model"],
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
        f"{_ROLLOUT}.name": "vllm",
        f"{_ROLLOUT}.n": config.rollout.samples_per_task,
        f"{_ROLLOUT}.temperature": algorithm.temperature,
        f"{_ROLLOUT}.top_p": 1.0,
        f"{_ROLLOUT}.top_k": -1,
        f"{_ROLLOUT}.calculate_log_probs": True,
        f"{_ROLLOUT}.log_prob_micro_batch_size_per_gpu": micro,
        f"{_MODEL}.path": str(model_path),
        f"{_MODEL}.enable_gradient_checkpointing": trainer.gradient_checkpointing,
        f"{_MODEL}.use_remove_padding": True,
        f"{_MODEL}.lora_rank": trainer.lora.rank,
        f"{_MODEL}.lora_alpha": trainer.lora.alpha,
        f"{_MODEL}.target_modules": trainer.lora.target_modules,
        "data.train_batch_size": rows,
        "data.max_prompt_length": max_prompt,
        "data.max_response_length": max_response,
        "trainer.n_gpus_per_node": trainer.n_gpus_per_node,
        "trainer.nnodes": trainer.nnodes,
        "trainer.project_name": config.name,
        "trainer.experiment_name": config.name,
        "trainer.logger": ["console"],
        "trainer.total_training_steps": 1,
        "trainer.total_epochs": 1,
        "trainer.save_freq": -1,
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.resume_mode": "disable",
        "trainer.default_local_dir": str(output_dir),
        "trainer.use_v1": False,
    }
    if algorithm.distillation is not None:
        settings.update(_distillation_settings(algorithm))
    if trainer.device == "cpu":
        # veRL's default attention is flash-attn, a CUDA kernel; SDPA runs everywhere (and
        # with use_remove_padding, on the packed rows).
        settings[f"++{_MODEL}.override_config.attn_implementation"] = "sdpa"
    return [f"{key}={_hydra_value(value)}" for key, value in settings.items()]


def _distillation_settings(algorithm: Any) -> dict[str, Any]:
    """``algorithm.distillation`` as veRL's own distillation loss (docs/trainer.md, "On-policy distillation").

    The k1 estimator as a policy-gradient term (``use_policy_gradient``), the verifier's
    GRPO loss beside it or not (``use_task_rewards``). The teacher is our serve-teacher
    daemon and its scores arrive in the batch, so veRL's teacher pool is empty (0 nodes,
    0 replicas); its model path is only recorded.
    """
    distillation = algorithm.distillation
    loss = "distillation.distillation_loss"
    return {
        "distillation.enabled": True,
        "distillation.n_gpus_per_node": 0,
        "distillation.nnodes": 0,
        "distillation.teacher_models.teacher_model.model_path": distillation.teacher_model,
        f"{loss}.loss_mode": distillation.estimator,
        f"{loss}.use_policy_gradient": True,
        f"{loss}.policy_loss_mode": "vanilla",
        f"{loss}.use_task_rewards": distillation.verifier_reward,
        f"{loss}.distillation_loss_coef": distillation.weight,
        f"{loss}.loss_max_clamp": distillation.clamp,
        f"{loss}.clip_ratio": algorithm.clip_ratio,
        f"{loss}.clip_ratio_low": algorithm.clip_ratio,
        f"{loss}.clip_ratio_high": algorithm.clip_ratio,
    }


def _config_dir() -> str:
    import verl

    return str(Path(verl.__file__).parent / "trainer" / "config")


def compose_verl_config(overrides: list[str]) -> Any:
    """veRL's packaged PPO config with ``overrides`` applied (Hydra compose, no working-dir change)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=_config_dir(), version_base=None):
            return compose(config_name=VERL_CONFIG_NAME, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise VerlConfigError(
            f"veRL's {VERL_CONFIG_NAME}.yaml does not accept the overrides ({exc}); "
            "check trainer.overrides against verl/trainer/config"
        ) from None


def _carry_bypass_mode(verl_config: Any) -> None:
    # veRL's apply_bypass_mode makes this switch on the driver at every step, after the
    # workers received their copy of the config, so they never see it; decide it here.
    from omegaconf import open_dict

    correction = verl_config.algorithm.rollout_correction
    if correction.bypass_mode:
        with open_dict(verl_config):
            verl_config.actor_rollout_ref.actor.policy_loss.loss_mode = "bypass_mode"
            verl_config.actor_rollout_ref.actor.policy_loss.rollout_correction = correction


def trainer_verl_config(config: ExperimentConfig, *, model_path: str | Path, output_dir: str | Path, rows: int) -> Any:
    """The composed, validated veRL config for one train step of ``rows`` batch rows."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    world = config.trainer.world_size
    if rows <= 0 or rows % world:
        raise VerlConfigError(f"the batch has {rows} rows; pad it to a multiple of the world size {world}")
    overrides = verl_overrides(config, model_path=model_path, output_dir=output_dir, rows=rows)
    verl_config = compose_verl_config(overrides + list(config.trainer.overrides))
    _carry_bypass_mode(verl_config)
    try:
        validate_config(verl_config, use_reference_policy=need_reference_policy(verl_config), use_critic=need_critic(verl_config))
    except (AssertionError, ValueError) as exc:
        raise VerlConfigError(f"veRL refuses the composed config: {exc}") from None
    return verl_config


def check_sampling_matches(batch_temperature: float, verl_config: Any) -> None:
    """The batch was sampled at the temperature veRL will divide logits by, or the step stops."""
    trained = float(verl_config.actor_rollout_ref.rollout.temperature)
    if not math.isclose(float(batch_temperature), trained, rel_tol=1e-6):
        raise TemperatureMismatchError(
            f"the batch was sampled at temperature {batch_temperature} (meta_info.temperature, from the proxy's "
            f"records) but veRL would train at actor_rollout_ref.rollout.temperature {trained}; make "
            "algorithm.temperature and any trainer.overrides agree with the proxy's sampling"
        )
