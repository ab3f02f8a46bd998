"""The GRPO policy update on a CPU: veRL's loss on the recorded batch, with a transformers model.

What runs is veRL's own arithmetic: ``get_policy_loss_fn("vanilla")`` (the PPO clipped
objective) and ``agg_loss`` from ``verl.trainer.ppo.core_algos``, log-probs and entropy
from ``verl.utils.torch_functional``, and veRL's actor/optimizer defaults
(``ActorConfig``, ``OptimizerConfig``: AdamW betas, weight decay, grad clip). Only the
model forward and the loop are ours: veRL's FSDP engine needs GPUs and a process group.

The data is on-policy, so the "old" log-probs are the ones the engine recorded
(``rollout_log_probs``); ``train/kl`` therefore starts as the engine/trainer mismatch.
The first epoch's forward passes run before any optimizer step, on the very weights the
engine sampled from, so they also measure that mismatch directly:
``train/logprob_gap_mean`` and ``train/logprob_gap_max`` are the mean and largest
|recorded - recomputed| log-prob over the batch's sampled tokens (docs/trainer.md).
"""

from __future__ import annotations

import math
from typing import Any

from components.core.config import AlgorithmConfig
from components.trainer.shared_prefix import MIN_SHARED, prefixed_logits, shared_prefix_length


class UpdateError(ValueError):
    """An update that cannot run as configured; the message names the setting and the fix."""


def actor_config(algorithm: AlgorithmConfig, rows: int) -> Any:
    """veRL's actor config for our algorithm settings (clip range, loss aggregation, optimizer)."""
    from verl.workers.config import ActorConfig, OptimizerConfig

    return ActorConfig(
        strategy="fsdp",  # required by the dataclass; nothing here dispatches on it
        rollout_n=1,
        ppo_mini_batch_size=max(rows, 1),
        ppo_micro_batch_size_per_gpu=algorithm.micro_batch_size,
        ppo_epochs=algorithm.epochs,
        clip_ratio=algorithm.clip_ratio,
        clip_ratio_low=algorithm.clip_ratio,
        clip_ratio_high=algorithm.clip_ratio,
        loss_agg_mode=algorithm.loss_agg_mode,
        use_torch_compile=False,
        optim=OptimizerConfig(lr=algorithm.learning_rate),
    )


def response_log_probs(model: Any, micro: Any, temperature: float) -> tuple[Any, Any]:
    """(log-prob, entropy) of each response token under ``model``, shape (rows, response width)."""
    from verl.utils.torch_functional import entropy_from_logits, logprobs_from_logits

    logits = response_logits(model, micro, temperature)
    return logprobs_from_logits(logits, micro["responses"]), entropy_from_logits(logits)


def response_logits(model: Any, micro: Any, temperature: float) -> Any:
    """The logits that predict each response token, (rows, response width, vocabulary), over ``temperature``."""
    response_width = micro["responses"].shape[1]
    # The logit at position t predicts token t+1: responses start after the last prompt token,
    # so the last R+1 positions less the final one. Only those are projected to the vocabulary:
    # on a 22k-token agent row the prompt's logits would be most of the update's memory.
    extra = _positions_and_images(micro)
    if micro.get("shared_prefix", 0):
        logits = prefixed_logits(model, micro, micro["shared_prefix"], response_width + 1, extra)
    else:
        logits = model(
            input_ids=micro["input_ids"],
            attention_mask=micro["attention_mask"],
            use_cache=False,
            logits_to_keep=response_width + 1,
            **extra,
        ).logits
    return logits[:, :response_width, :] / temperature


def _positions_and_images(micro: dict[str, Any]) -> dict[str, Any]:
    """The forward's position ids, and a vision-language row's images (row_images.py)."""
    import torch

    positions = micro["position_ids"]
    if positions.dim() == 2:
        return {"position_ids": positions}
    # veRL's (rows, 4, width) to the model's (4, rows, width): text positions, then t, h, w.
    extra: dict[str, Any] = {"position_ids": positions.transpose(0, 1)}
    inputs = [row for row in micro.get("multi_modal_inputs", ()) if row]
    if inputs:  # the model scatters them over the pad tokens in row order
        extra["pixel_values"] = torch.cat([row["pixel_values"] for row in inputs])
        extra["image_grid_thw"] = torch.cat([row["image_grid_thw"] for row in inputs])
    return extra


def micro_batches(
    batch: Any, micro_size: int, max_tokens: int, images: Any = None, image_token: int | None = None
) -> list[dict[str, Any]]:
    """Consecutive rows of ``batch`` in groups of at most ``micro_size`` rows and ``max_tokens``
    padded tokens (rows x the group's own widths; a prompt prefix every row shares counts
    once, as it runs once: shared_prefix.py), each trimmed of the padding only other rows
    needed; a row longer than ``max_tokens`` goes alone. ``images``: the rows'
    ``multi_modal_inputs`` (a vision-language policy); its rows share only the text before
    their first ``image_token``, and none without it."""
    prompt_width = batch["prompts"].shape[1]
    lengths = list(zip(batch["attention_mask"][:, :prompt_width].sum(1).tolist(), batch["attention_mask"][:, prompt_width:].sum(1).tolist()))
    shares = image_token is not None if images is not None or batch["position_ids"].dim() == 3 else True

    def run_once(first: int, row: int) -> int:
        """The prefix rows ``first`` and ``row`` share, when it is worth running once."""
        if not shares:
            return 0
        prompts = [batch["prompts"][r, prompt_width - lengths[r][0] :] for r in (first, row)]
        shared = shared_prefix_length(prompts, image_token)
        return shared if shared >= MIN_SHARED else 0

    groups, start, shared = [], 0, 0
    for end in range(1, len(lengths) + 1):
        rows = lengths[start:end]
        if end - start == 1:
            candidate = 0
        else:  # a group shares what each of its rows shares with its first row
            pair = run_once(start, end - 1)
            candidate = pair if end - start == 2 else min(shared, pair)
        padded = candidate + len(rows) * (max(p for p, _ in rows) - candidate + max(r for _, r in rows))
        if end - start > 1 and (end - start > micro_size or padded > max_tokens):
            groups.append((start, end - 1, shared))
            start, shared = end - 1, 0
        else:
            shared = candidate
    groups.append((start, len(lengths), shared))
    micros = []
    for a, b, common in groups:
        micro = _trimmed(batch, a, b, lengths[a:b], prompt_width)
        micro["shared_prefix"] = common
        if images is not None:
            micro["multi_modal_inputs"] = list(images[a:b])
        micros.append(micro)
    return micros


def _trimmed(batch: Any, start: int, end: int, lengths: list[tuple[int, int]], prompt_width: int) -> dict[str, Any]:
    prompt, response = max(p for p, _ in lengths), max(r for _, r in lengths)
    columns = slice(prompt_width - prompt, prompt_width + response)  # prompts left-, responses right-padded
    micro = {key: batch[key][start:end, ..., columns] for key in ("input_ids", "attention_mask", "position_ids")}
    micro["prompts"] = batch["prompts"][start:end, prompt_width - prompt :]
    for key in ("responses", "response_mask", "rollout_log_probs", "advantages"):
        if key in batch.keys():  # an SFT batch has no advantages
            micro[key] = batch[key][start:end, :response]
    return micro


def policy_loss(log_prob: Any, entropy: Any, micro: Any, config: Any) -> tuple[Any, dict[str, float]]:
    """veRL's vanilla PPO-clip loss of one micro-batch, normalised over the whole batch.

    ``config.global_batch_info`` carries the batch's token and row counts, so the
    micro-batch losses sum to the batch loss as in veRL's own ``ppo_loss``.
    """
    import torch
    from verl.trainer.ppo.core_algos import agg_loss, get_policy_loss_fn

    mask = micro["response_mask"].to(torch.bool)
    loss, pg_metrics = get_policy_loss_fn("vanilla")(
        old_log_prob=micro["rollout_log_probs"],
        log_prob=log_prob,
        advantages=micro["advantages"],
        response_mask=mask,
        loss_agg_mode=config.loss_agg_mode,
        config=config,
    )
    with torch.no_grad():
        entropy_value = agg_loss(entropy, mask, config.loss_agg_mode, **config.global_batch_info)
    return loss, {
        "kl": pg_metrics["actor/ppo_kl"],
        "clip_frac": pg_metrics["actor/pg_clipfrac"],
        "entropy": float(entropy_value),
    }


def global_batch_info(response_mask: Any) -> dict[str, Any]:
    # One optimizer step per epoch over the whole batch, on one "rank".
    return {
        "dp_size": 1,
        "batch_num_tokens": int(response_mask.sum()),
        "global_batch_size": int((response_mask.sum(dim=-1) > 0).sum()),
        "loss_scale_factor": None,
    }


def _logprob_gap(log_prob: Any, micro: dict[str, Any]) -> tuple[float, float]:
    """(sum, max) of |recorded - recomputed| log-prob over the micro-batch's sampled tokens."""
    import torch

    with torch.no_grad():
        gap = (log_prob.detach() - micro["rollout_log_probs"]).abs()[micro["response_mask"].to(torch.bool)]
    return (float(gap.sum()), float(gap.max())) if gap.numel() else (0.0, 0.0)


def _epoch(
    model: Any, optimizer: Any, batch: Any, config: Any, temperature: float, micros: list[dict], first: bool
) -> dict[str, float]:
    import torch

    optimizer.zero_grad(set_to_none=True)
    total_tokens = int(batch["response_mask"].sum())
    sums = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0}
    gap_sum, gap_max = 0.0, 0.0
    for micro in micros:
        log_prob, entropy = response_log_probs(model, micro, temperature)
        if first:  # no step yet: these are the sampled weights' log-probs
            micro_sum, micro_max = _logprob_gap(log_prob, micro)
            gap_sum, gap_max = gap_sum + micro_sum, max(gap_max, micro_max)
        loss, metrics = policy_loss(log_prob, entropy, micro, config)
        loss.backward()
        sums["loss"] += float(loss.detach())  # already a share of the batch loss
        # veRL reports these as micro-batch means; weight them back to batch means.
        weight = int(micro["response_mask"].sum()) / total_tokens
        for name in ("kl", "clip_frac"):
            sums[name] += metrics[name] * weight
        sums["entropy"] += metrics["entropy"]
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=config.optim.clip_grad)
    if torch.isfinite(grad_norm):
        optimizer.step()
    else:
        optimizer.zero_grad(set_to_none=True)  # veRL skips a step with a non-finite norm
    gap = {"logprob_gap_mean": gap_sum / total_tokens, "logprob_gap_max": gap_max} if first else {}
    return {**sums, "grad_norm": float(grad_norm), **gap}


# Where vision-language models keep their vision tower (Qwen2/2.5-VL: model.visual).
_TOWER_NAMES = ("visual", "vision_tower", "vision_model")


def freeze_vision_tower(model: Any) -> int:
    """Keep the vision tower's weights out of the update; returns how many it froze.

    Frozen weights get no gradient, so AdamW leaves them (and their moments) untouched
    and the checkpoint carries the tower as it was.
    """
    towers = [module for name, module in model.named_modules() if name.rsplit(".", 1)[-1] in _TOWER_NAMES]
    if not towers:
        raise UpdateError(
            f"trainer.freeze_vision_tower is set but the policy ({type(model).__name__}) has no vision tower: "
            "unset it for a text model"
        )
    towers[0].requires_grad_(False)
    return sum(param.numel() for param in towers[0].parameters())


def build_optimizer(model: Any, algorithm: AlgorithmConfig, state: dict | None = None) -> Any:
    """veRL's AdamW for ``model``, resuming ``state`` (the previous iteration's) when given.

    The saved state brings its own hyperparameters; the config's win, so a changed
    learning rate applies from the next iteration on.
    """
    import torch

    optim = actor_config(algorithm, 1).optim
    hyper = {"lr": optim.lr, "betas": tuple(optim.betas), "weight_decay": optim.weight_decay}
    optimizer = torch.optim.AdamW(model.parameters(), **hyper)
    if state is not None:
        _check_state_fits(state, list(model.parameters()))
        optimizer.load_state_dict(state)
        for group in optimizer.param_groups:
            group.update(hyper)
    return optimizer


def _check_state_fits(state: dict, params: list[Any]) -> None:
    # load_state_dict checks parameter counts but not shapes; a mismatch would fail mid-step.
    moments = state.get("state", {})
    for index, param in enumerate(params):
        saved = moments.get(index, {}).get("exp_avg")
        if saved is not None and tuple(saved.shape) != tuple(param.shape):
            raise UpdateError(
                f"the saved optimizer state does not fit the model (parameter {index}: {tuple(saved.shape)} vs "
                f"{tuple(param.shape)}); delete optimizer.pt from the parent checkpoint to start a fresh AdamW"
            )
    if sum(len(g["params"]) for g in state.get("param_groups", [])) != len(params):
        raise UpdateError(
            "the saved optimizer state covers a different number of parameters than the model; delete "
            "optimizer.pt from the parent checkpoint to start a fresh AdamW"
        )


def cpu_update(model: Any, data: Any, algorithm: AlgorithmConfig, seed: int, optimizer: Any = None) -> dict[str, float]:
    """Update ``model`` in place on the DataProto ``data``; returns the train/* metrics.

    ``optimizer`` (``build_optimizer``) carries AdamW's moments across iterations, as
    veRL's checkpoints do; without it the update starts a fresh AdamW. Deterministic for a
    given seed, model, batch and optimizer state: no dropout, no shuffling, fixed
    micro-batch order.
    """
    import torch

    if algorithm.kl_coef > 0:
        raise UpdateError(
            f"algorithm.kl_coef={algorithm.kl_coef}: the CPU trainer has no reference policy yet; set it to 0"
        )
    if len(data) == 0 or not int(data.batch["response_mask"].sum()):
        raise UpdateError(
            "the batch has no sampled token (batch/trained_tokens 0); there is nothing to update. The train step "
            "names the reasons (skipped groups, dropped rows, unusable rollouts) before it gets here"
        )
    temperature = float(data.meta_info["temperature"])
    if not math.isclose(temperature, algorithm.temperature, rel_tol=1e-6):
        raise UpdateError(
            f"the batch was built for temperature {temperature} but algorithm.temperature is "
            f"{algorithm.temperature}; rebuild the batch with the same config"
        )
    torch.manual_seed(seed)
    batch = data.batch
    config = actor_config(algorithm, len(data))
    config.global_batch_info.update(global_batch_info(batch["response_mask"]))
    if optimizer is None:
        optimizer = build_optimizer(model, algorithm)
    model.train()
    images = data.non_tensor_batch.get("multi_modal_inputs")
    image_token = getattr(model.config, "image_token_id", None) if images is not None else None
    micros = micro_batches(batch, algorithm.micro_batch_size, algorithm.micro_batch_tokens, images, image_token)
    epochs = [_epoch(model, optimizer, batch, config, temperature, micros, first=i == 0) for i in range(algorithm.epochs)]
    model.eval()
    averaged = {name: sum(e[name] for e in epochs) / len(epochs) for name in epochs[-1]}
    gap = {name: value for name, value in epochs[0].items() if name.startswith("logprob_gap")}
    return {f"train/{name}": value for name, value in {**averaged, **gap}.items()}
