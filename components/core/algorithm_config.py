"""The ``algorithm:`` section of an experiment config: GRPO's settings, the row limits,
the update's batching, overlapped iterations and on-policy distillation.

Its own module: the experiment config outgrew one file. ``components.core.config`` imports it,
so ``from components.core.config import AlgorithmConfig`` still reads it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from components.core.distillation_config import DistillationConfig


class AlgorithmConfig(BaseModel):
    """The `algorithm:` section: the RL objective and how each iteration's update runs (docs/trainer.md)."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["grpo"] = "grpo"
    learning_rate: float = Field(1e-4, gt=0)
    temperature: float = Field(
        1.0,
        gt=0,
        description="Sampling temperature of training rollouts: the proxy sends it on every call (--training "
        "--temperature), the engine returns the logprobs of that distribution, and the trainer scores the policy at it "
        "and refuses calls sampled otherwise. Below 1 a weak policy passes more often, so more GRPO groups carry a signal.",
    )
    clip_ratio: float = Field(0.2, gt=0, description="PPO clip range (low and high).")
    kl_coef: float = Field(0.0, ge=0, description="KL penalty against the reference policy (0: off, the GRPO default here).")
    loss_agg_mode: Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"] = "token-mean"
    norm_adv_by_std: bool = Field(True, description="GRPO: divide advantages by the group's std.")
    max_prompt_tokens: int | None = Field(
        None,
        gt=0,
        description="Longest prompt of a training row (the prompt of the call that starts it); a call whose prompt "
        "is longer is dropped (batch/dropped_rows). Unset: engine.max_model_len, so every call the engine served fits.",
    )
    max_response_tokens: int | None = Field(
        None,
        gt=0,
        description="Longest response of a training row (completions and the context between them); a longer row "
        "is split at call boundaries into rows of the same rollout (batch/split_rows), and a single completion "
        "longer than this is dropped. Unset: engine.max_model_len.",
    )
    epochs: int = Field(1, ge=1, description="Passes over the batch per iteration.")
    micro_batch_size: int = Field(8, ge=1, description="Rows per forward/backward pass (also capped by micro_batch_tokens).")
    micro_batch_tokens: int = Field(
        32768,
        gt=0,
        description="CPU trainer: most padded tokens (rows x widest row) in one micro-batch; a longer row goes alone. "
        "Bounds the update's memory on long agent rows (docs/trainer.md, 'Memory').",
    )
    shuffle_rewards: bool = Field(
        False,
        description="A control, for benchmarks: the train step learns from rewards permuted within each group "
        "(seeded by `seed` and the iteration), so each group keeps its rewards but loses their link to what each "
        "rollout did. A pipeline that learns anyway is learning from something other than the reward. Reported "
        "rewards, pass rates and outcomes stay the verifier's; rewards.json keeps the true ones in `verifier_rewards`.",
    )
    allow_empty_update: bool = Field(
        False,
        description="Commit the unchanged checkpoint when the batch has no sampled token to train on (every group's "
        "rewards equal, every row dropped or every rollout unusable). Off: such a train step fails with the counts "
        "per reason, because an iteration that silently trains nothing looks like one that learned nothing.",
    )
    max_staleness: int = Field(
        0,
        ge=0,
        le=1,
        description="Overlapped iterations (docs/trainer.md, 'Overlapped iterations'). 0: each iteration samples the "
        "checkpoint it trains. 1: iteration k+1's rollouts run on checkpoint k while iteration k trains, so the "
        "engine does not idle during training; the update corrects with the recorded behaviour logprobs "
        "(trainer.rollout_correction) and every call keeps the policy version that sampled it.",
    )
    distillation: DistillationConfig | None = Field(
        None,
        description="On-policy distillation: a teacher sharing the policy's tokenizer scores each sampled token, and "
        "its reverse-KL term joins (or replaces) the verifier reward's advantage (docs/trainer.md, 'On-policy "
        "distillation'). Unset: off.",
    )

    def sampled_version(self, iteration: int) -> int:
        """The checkpoint iteration ``iteration``'s rollouts sample from (the serve step serves it)."""
        return max(iteration - self.max_staleness, 0)

    def row_limits(self, max_model_len: int) -> tuple[int, int]:
        """(max prompt, max response) tokens of a row; an unset limit is the engine's context length.

        A row never outgrows one call's context (a continuation's prompt holds the whole row
        so far), so limits of max_model_len keep every call the engine served.
        """
        return self.max_prompt_tokens or max_model_len, self.max_response_tokens or max_model_len
