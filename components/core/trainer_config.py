"""The ``trainer`` section of the experiment config: where and how the policy update runs.

``backend: cpu`` is the embedded default (a transformers model on the CPU, veRL's loss);
``backend: verl`` is veRL's own FSDP trainer on GPUs (or, with ``device: cpu``, the same
workers on the CPU). Every veRL setting we do not name
here stays reachable through ``overrides`` (Hydra syntax, applied last), and the one
place that maps these fields to veRL's keys is ``components/trainer/verl_config.py``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# key=value, +key=value (add), ~key (delete), ++key=value (force): Hydra's override grammar.
_OVERRIDE = re.compile(r"^(\+\+|\+|~)?[A-Za-z_][\w.\-]*(=.*)?$", re.DOTALL)
# Where the train step keeps its work (the checkpoint it starts from, the batch, the shards):
# on a multi-node train step, a folder every node mounts at the same path (docs/trainer.md).
TRAIN_WORK_DIR_ENV = "OPENFORGE_TRAIN_WORK_DIR"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraConfig(_Section):
    """LoRA training: the engine keeps the base weights and loads each iteration's adapter at run time."""

    rank: int = Field(0, ge=0, description="LoRA rank; 0 trains every weight (full fine-tuning).")
    alpha: int = Field(16, gt=0, description="LoRA scaling numerator (alpha / rank scales the update).")
    target_modules: str | list[str] = Field(
        "all-linear", description="Modules that get adapters: 'all-linear' or a list of module names."
    )

    @property
    def enabled(self) -> bool:
        return self.rank > 0


class RolloutCorrectionConfig(_Section):
    """veRL's ``algorithm.rollout_correction``, field for field: how the trainer treats the gap
    between the engine that sampled (vLLM, bf16) and the policy it trains (FSDP)."""

    bypass_mode: bool = Field(
        False,
        description="true: the engine's recorded logprobs are the old policy (no extra forward pass); "
        "false: the trainer recomputes old logprobs and weights tokens by old/rollout (decoupled).",
    )
    rollout_is: Literal["token", "sequence"] | None = Field(
        "token", description="Truncated importance sampling level (decoupled mode); null turns weights off."
    )
    rollout_is_threshold: float | str = Field(
        2.0, description="Upper bound of the IS weight (float), or 'lower_upper' to zero weights outside."
    )
    rollout_rs: str | None = Field(None, description="Rejection sampling mode, e.g. 'token_k1' (null: off).")
    rollout_rs_threshold: float | str | None = Field(None, description="Rejection sampling bound(s).")
    loss_type: Literal["ppo_clip", "reinforce"] = Field("ppo_clip", description="Loss in bypass mode.")


class TrainerConfig(_Section):
    backend: Literal["cpu", "verl"] = Field(
        "cpu", description="`cpu`: the embedded CPU update; `verl`: veRL's FSDP trainer on GPUs."
    )
    device: Literal["cuda", "cpu"] = Field(
        "cuda",
        description="Where veRL's workers run (backend verl): `cuda` GPUs, or `cpu`: the same workers on CPU over "
        "gloo, one process per logical GPU (tests, CI; slow). docs/trainer.md, 'veRL's workers on CPU'.",
    )
    n_gpus_per_node: int = Field(1, ge=1, description="GPUs per node of the train step (veRL world size).")
    nnodes: int = Field(1, ge=1, description="Nodes of the train step.")
    strategy: Literal["fsdp", "fsdp2"] = Field("fsdp2", description="veRL's FSDP engine version.")
    gradient_checkpointing: bool = Field(True, description="Recompute activations in the backward pass.")
    max_token_len_per_gpu: int = Field(
        16384, gt=0, description="Largest packed micro-batch (tokens) one GPU computes log-probs on."
    )
    lora: LoraConfig = Field(default_factory=LoraConfig)
    freeze_vision_tower: bool = Field(
        False,
        description="A vision-language policy: train the language model only, the vision tower's weights kept as "
        "they are (the CPU update; docs/trainer.md, 'Images (GUI agents)').",
    )
    rollout_correction: RolloutCorrectionConfig = Field(default_factory=RolloutCorrectionConfig)
    overrides: list[str] = Field(
        default_factory=list,
        description="veRL Hydra overrides applied after ours, e.g. 'actor_rollout_ref.actor.clip_ratio_high=0.28'.",
    )

    @field_validator("overrides")
    @classmethod
    def _hydra_syntax(cls, values: list[str]) -> list[str]:
        for value in values:
            if not _OVERRIDE.match(value.strip()):
                raise ValueError(
                    f"override {value!r} is not Hydra syntax: write 'dotted.key=value' "
                    "(or '+key=value' to add, '~key' to delete)"
                )
        return [value.strip() for value in values]

    @model_validator(mode="after")
    def _lora_needs_verl(self) -> "TrainerConfig":
        if self.lora.enabled and self.backend != "verl":
            raise ValueError("trainer.lora.rank > 0 needs trainer.backend 'verl' (the CPU update trains full weights)")
        return self

    @model_validator(mode="after")
    def _freezing_is_the_cpu_updates(self) -> "TrainerConfig":
        if self.freeze_vision_tower and self.backend == "verl":
            raise ValueError(
                "trainer.freeze_vision_tower needs trainer.backend 'cpu': veRL's workers declare "
                "actor.freeze_vision_tower but do not apply it, so the tower would train anyway; unset it to "
                "train the whole model with veRL"
            )
        return self

    @model_validator(mode="after")
    def _nodes_are_verls(self) -> "TrainerConfig":
        if self.nnodes > 1 and self.backend != "verl":
            raise ValueError(
                f"trainer.nnodes {self.nnodes} needs trainer.backend 'verl': the CPU update is one process; "
                "set trainer.nnodes: 1 or trainer.backend: verl"
            )
        return self

    @model_validator(mode="after")
    def _cpu_device_is_verls(self) -> "TrainerConfig":
        if self.device == "cpu" and self.backend != "verl":
            raise ValueError(
                "trainer.device 'cpu' places veRL's workers and needs trainer.backend 'verl'; "
                "backend 'cpu' already runs on the CPU: remove trainer.device"
            )
        return self

    @property
    def world_size(self) -> int:
        return self.n_gpus_per_node * self.nnodes
