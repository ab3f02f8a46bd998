"""veRL's ``RayPPOTrainer``, fed the recorded batch instead of generating one.

Why the classic trainer and not veRL 0.9's newer ``trainer/ppo/v1`` entry: v1 is built
around a TransferQueue and a replay buffer that its own agent loop fills (it does not
even import without the ``transfer_queue`` package), while ``RayPPOTrainer``'s stages
are methods that take the padded ``DataProto`` our batch file already is. So this
subclass keeps veRL's stages (old log-probs, reference log-probs, batch balancing, the
actor update, the FSDP checkpoint) and replaces only what assumes generation: no
dataset, no rollout replicas, no agent loop, one update per call.

The pure data steps (``update_batch``, ``correct_for_rollout``) are module functions so
that CPU tests run them on the very batch the GPU step trains on.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from components.trainer.verl_config import check_sampling_matches

# Present in the batch file for metrics; not something workers should receive.
_LOCAL_META = ("openforge_batch_stats",)
PAD_UID = "openforge-padding"


def pad_to_multiple(data: Any, multiple: int) -> tuple[Any, int]:
    """``data`` plus masked copies of its first rows so its length divides ``multiple``.

    veRL splits a batch evenly across data-parallel ranks; the copies carry no sampled
    token (response_mask 0, advantage 0, reward 0), so they add nothing to the loss.
    """
    import numpy as np
    from verl import DataProto

    missing = (-len(data)) % multiple
    if missing == 0:
        return data, 0
    pad = data.select_idxs(np.arange(missing) % len(data)).select(deepcopy=True)
    for key in ("response_mask", "advantages", "token_level_scores", "token_level_rewards"):
        if key in pad.batch.keys():
            pad.batch[key].zero_()
    pad.non_tensor_batch["uid"] = np.array([PAD_UID] * missing, dtype=object)
    if "rollout_id" in pad.non_tensor_batch:
        pad.non_tensor_batch["rollout_id"] = np.array([""] * missing, dtype=object)
    return DataProto.concat([data, pad]), missing


def update_batch(data: Any, verl_config: Any, world_size: int) -> Any:
    """The recorded batch made ready for veRL's update stages (a copy; ``data`` is untouched).

    Refuses a batch sampled at another temperature than veRL trains at, pads to the
    world size, and in bypass mode makes the recorded logprobs the old policy with veRL's
    own ``apply_bypass_mode``.
    """
    import torch

    if len(data) == 0:
        raise ValueError("the batch has no rows (every group was skipped); there is nothing to update")
    check_sampling_matches(data.meta_info["temperature"], verl_config)
    batch = data.select(deepcopy=True)
    for key in _LOCAL_META:
        batch.meta_info.pop(key, None)
    batch, _ = pad_to_multiple(batch, world_size)
    distillation_inputs(batch, verl_config)
    batch.meta_info["global_token_num"] = torch.sum(batch.batch["attention_mask"], dim=-1).tolist()
    batch.meta_info["images_seqlens"] = []
    correction = verl_config.algorithm.rollout_correction
    if correction.bypass_mode:
        from verl.trainer.ppo.rollout_corr_helper import apply_bypass_mode

        apply_bypass_mode(batch, correction, verl_config.actor_rollout_ref.actor.policy_loss)
    return batch


def distillation_inputs(batch: Any, verl_config: Any) -> None:
    """Hand the teacher's scores to veRL's own distillation loss, in place.

    The train step stored ``teacher_log_probs`` (per response token) and, for the CPU
    update, folded the teacher's term into ``advantages``. veRL computes that term itself
    (``distillation_ppo_loss``, from its recomputed student log-probs), so here the
    advantage is the reward's alone again, and the scores move to veRL's layout:
    ``teacher_logprobs`` over the whole padded sequence, position i holding the log-prob of
    token i+1 (as veRL's vLLM teacher client writes them), ``teacher_ids`` those tokens.
    """
    import torch

    enabled = bool(verl_config.get("distillation", {}).get("enabled", False))
    scored = "teacher_log_probs" in batch.batch.keys()
    if enabled != scored:
        raise ValueError(
            "the batch carries the teacher's scores but veRL's distillation is off" if scored else
            "veRL's distillation is on but the batch has no teacher scores (the distill step stores them)"
        )  # fmt: skip
    if not scored:
        return
    # A shallow copy: DataProto.select(deepcopy=True) shares the TensorDict with the stored batch.
    tensors = batch.batch = batch.batch.copy()
    input_ids, teacher = tensors["input_ids"], tensors["teacher_log_probs"]
    prompt_width = tensors["prompts"].shape[1]
    response_width = teacher.shape[1]
    logprobs = torch.zeros(*input_ids.shape, 1, dtype=teacher.dtype)
    logprobs[:, prompt_width - 1 : prompt_width - 1 + response_width, 0] = teacher
    ids = torch.zeros(*input_ids.shape, 1, dtype=input_ids.dtype)
    ids[:, :-1, 0] = input_ids[:, 1:]
    tensors["teacher_logprobs"], tensors["teacher_ids"] = logprobs, ids
    tensors["advantages"] = tensors.pop("reward_advantages") * tensors["response_mask"]
    tensors.pop("teacher_log_probs")


def correct_for_rollout(batch: Any, verl_config: Any) -> tuple[Any, dict[str, float]]:
    """Decoupled mode: veRL's IS weights / rejection from old (recomputed) vs rollout logprobs."""
    correction = verl_config.algorithm.rollout_correction
    if correction.bypass_mode:
        return batch, {}
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch

    return compute_rollout_correction_and_add_to_batch(batch, correction)


@contextmanager
def _config_values(config: Any, values: dict[str, Any]) -> Iterator[None]:
    from omegaconf import OmegaConf, open_dict

    saved = {key: OmegaConf.select(config, key) for key in values}
    with open_dict(config):
        for key, value in values.items():
            OmegaConf.update(config, key, value)
    try:
        yield
    finally:
        with open_dict(config):
            for key, value in saved.items():
                OmegaConf.update(config, key, value)


def _trainer_class() -> type:
    """The subclass, defined on first use so that importing this module needs no veRL."""
    from omegaconf import open_dict
    from verl.single_controller.ray import RayClassWithInitArgs
    from verl.single_controller.ray.base import create_colocated_worker_cls
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.trainer.ppo.utils import Role
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.metric import reduce_metrics

    class RecordedBatchTrainer(RayPPOTrainer):
        """One PPO/GRPO update on a recorded batch per call; workers: actor (+ reference)."""

        def _create_dataloader(self, train_dataset, val_dataset, collate_fn, train_sampler) -> None:
            # The batch comes from the proxy's records: no dataset, one step per iteration.
            self.total_training_steps = 1
            with open_dict(self.config):
                self.config.actor_rollout_ref.actor.optim.total_training_steps = 1

        def init_workers(self) -> None:
            # Like RayPPOTrainer.init_workers, minus rollout replicas, agent loop, reward
            # loop and checkpoint engine: the engine is a separate step (vLLM serve).
            self.resource_pool_manager.create_resource_pool()
            pool = self.resource_pool_manager.get_resource_pool(Role.ActorRollout)
            worker = self.role_worker_mapping[Role.ActorRollout]
            distillation = self.config.get("distillation")
            roles = {
                "actor": RayClassWithInitArgs(
                    cls=worker, config=self.config.actor_rollout_ref, role="actor", distillation_config=distillation
                )
            }
            if self.use_reference_policy and not self.ref_in_actor:
                roles["ref"] = RayClassWithInitArgs(cls=worker, config=self.config.actor_rollout_ref, role="ref")
            group = self.ray_worker_group_cls(
                resource_pool=pool, ray_cls_with_init=create_colocated_worker_cls(class_dict=roles), device_name=self.device_name
            )
            spawned = group.spawn(prefix_set=roles.keys())
            self.actor_rollout_wg = spawned["actor"]
            self.actor_rollout_wg.init_model()
            if "ref" in spawned:
                self.ref_policy_wg = spawned["ref"]
                self.ref_policy_wg.init_model()
            elif self.use_reference_policy:
                self.ref_policy_wg = self.actor_rollout_wg
            # _update_actor reads the loss settings from here (veRL sets it with its teacher pool).
            self.distillation_config = omega_conf_to_dataclass(distillation) if self.use_teacher_policy else None
            self.global_steps = 1

        def _update_actor(self, batch: Any) -> Any:
            # veRL counts a mini-batch in prompts x rollout.n; our rows are merged calls,
            # so the single mini-batch (one optimizer step per epoch) is counted in rows.
            values = {"actor_rollout_ref.rollout.n": 1, "actor_rollout_ref.actor.ppo_mini_batch_size": len(batch)}
            with _config_values(self.config, values):
                return super()._update_actor(batch)

        def train_step(self, data: Any) -> dict[str, float]:
            """One update on ``data`` (the batch file's DataProto); veRL's metrics, flattened."""
            from verl.utils.debug.metrics import calculate_debug_metrics

            metrics: dict[str, float] = {}
            world = self.config.trainer.n_gpus_per_node * self.config.trainer.nnodes
            batch = update_batch(data, self.config, world)
            if world > 1 and self.config.trainer.balance_batch:
                self._balance_batch(batch, metrics=metrics)
            if "old_log_probs" not in batch.batch.keys():
                old_log_prob, _ = self._compute_old_log_prob(batch)
                old_log_prob.batch.pop("entropys")
                batch = batch.union(old_log_prob)
                metrics.update(calculate_debug_metrics(batch))
            if self.use_reference_policy:
                batch = batch.union(self._compute_ref_log_prob(batch))
            batch, correction_metrics = correct_for_rollout(batch, self.config)
            metrics.update(correction_metrics)
            output = self._update_actor(batch)
            metrics.update(reduce_metrics(output.meta_info["metrics"]))
            return {name: float(value) for name, value in metrics.items() if _is_number(value)}

        def save_actor(self, local_dir: Path) -> Path:
            """The FSDP shards, ``fsdp_config.json`` and ``huggingface/`` (config, tokenizer) of the actor."""
            self.actor_rollout_wg.save_checkpoint(str(local_dir), None, self.global_steps, max_ckpt_to_keep=1)
            return local_dir

    return RecordedBatchTrainer


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def build_trainer(verl_config: Any) -> Any:
    """A ``RecordedBatchTrainer`` for ``verl_config`` (Ray must be initialised); workers not yet started."""
    import ray
    from verl.single_controller.ray import RayWorkerGroup, ResourcePoolManager
    from verl.trainer.ppo.utils import Role, need_reference_policy
    from verl.utils import hf_tokenizer
    from verl.workers.engine_workers import ActorRolloutRefWorker

    worker = ray.remote(ActorRolloutRefWorker)
    mapping = {Role.ActorRollout: worker}
    if need_reference_policy(verl_config):
        mapping[Role.RefPolicy] = worker
    trainer_settings = verl_config.trainer
    pools = ResourcePoolManager(
        resource_pool_spec={"global_pool": [trainer_settings.n_gpus_per_node] * trainer_settings.nnodes},
        mapping={role: "global_pool" for role in mapping},
    )
    return _trainer_class()(
        config=verl_config,
        tokenizer=hf_tokenizer(verl_config.actor_rollout_ref.model.path),
        role_worker_mapping=mapping,
        resource_pool_manager=pools,
        ray_worker_group_cls=RayWorkerGroup,
        device_name=trainer_settings.device,
    )
