"""An in-process stand-in for veRL's actor worker group: what the FSDP engine computes, on a tiny model.

veRL's real workers run on CPU too (``trainer.device: cpu``, ``test_verl_workers_cpu.py``),
but each run starts Ray and worker processes (over a minute on 2 cores), and what the
trainer hands its workers is not visible from outside them. This stand-in reproduces
their contract (packed inputs in, packed per-token log-probs out; the update through
veRL's own ``ppo_loss``, or ``distillation_ppo_loss`` when the config enables distillation,
as veRL's worker chooses) in the test's process, where a test can count the calls and
see the mini-batch sizes. Use it only for that; the update itself is the real run's.
"""

from __future__ import annotations

from typing import Any

import torch


def packed_log_probs(model: Any, packed: Any, temperature: float = 1.0) -> Any:
    """Per packed token, log p(next token) (0 at each sequence end): veRL's ``log_probs`` layout."""
    values, offsets = packed["input_ids"].values(), packed["input_ids"].offsets()
    positions = packed["position_ids"].values()
    pieces = []
    for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        ids = values[start:end]
        logits = model(input_ids=ids[None], position_ids=positions[start:end][None], use_cache=False).logits[0]
        log_probs = torch.log_softmax(logits / temperature, dim=-1)
        pieces.append(log_probs.gather(-1, torch.roll(ids, -1)[:, None])[:, 0])
    return torch.nested.nested_tensor_from_jagged(torch.cat(pieces), offsets=offsets)


def assign_global_batch_info(packed: Any, global_batch_size: int) -> None:
    """What veRL's FSDP engine adds before the loss (one data-parallel rank)."""
    from verl.utils import tensordict_utils as tu

    tu.assign_non_tensor(
        packed, dp_size=1, batch_num_tokens=int(packed["loss_mask"].sum()), global_batch_size=global_batch_size
    )


class InProcessActor:
    """``actor_rollout_wg`` for ``RecordedBatchTrainer``: compute_log_prob and update_actor on a CPU model."""

    def __init__(self, model: Any, verl_config: Any) -> None:
        from verl.utils.config import omega_conf_to_dataclass

        self.model = model
        self.config = omega_conf_to_dataclass(verl_config.actor_rollout_ref.actor)
        distillation = verl_config.get("distillation")
        self.distillation = omega_conf_to_dataclass(distillation) if distillation and distillation.enabled else None
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        self.log_prob_calls = 0
        self.mini_batch_sizes: list[int] = []
        self.losses: list[float] = []
        self.loss_terms: list[dict[str, float]] = []  # veRL's loss metrics per update, aggregated

    def compute_log_prob(self, data: Any) -> Any:
        from verl.utils import tensordict_utils as tu

        self.log_prob_calls += 1
        temperature = tu.get(data, "temperature")
        with torch.no_grad():
            log_probs = packed_log_probs(self.model, data, temperature)
        return tu.get_tensordict(
            {"log_probs": log_probs, "entropy": torch.zeros_like(log_probs)}, non_tensor_dict={"metrics": {"mfu": 0.0}}
        )

    def update_actor(self, data: Any) -> Any:
        from verl.trainer.distillation import distillation_ppo_loss
        from verl.utils import tensordict_utils as tu
        from verl.workers.utils.losses import ppo_loss

        mini_batch_size = tu.pop(data, key="mini_batch_size")
        self.mini_batch_sizes.append(mini_batch_size)
        assign_global_batch_info(data, tu.get(data, "global_batch_size"))
        self.optimizer.zero_grad()
        output = {"log_probs": packed_log_probs(self.model, data, tu.get(data, "temperature"))}
        if self.distillation is None:
            loss, metrics = ppo_loss(self.config, output, data)
        else:
            loss, metrics = distillation_ppo_loss(self.config, self.distillation, model_output=output, data=data)
        loss.backward()
        self.optimizer.step()
        self.losses.append(float(loss.detach()))
        self.loss_terms.append({name: float(_value(metric)) for name, metric in metrics.items()})
        return tu.get_tensordict({}, non_tensor_dict={"metrics": {"mfu": [0.0], "pg_loss": [self.losses[-1]]}})


def _value(metric: Any) -> Any:
    return metric.aggregate() if hasattr(metric, "aggregate") else metric
