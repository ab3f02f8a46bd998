"""The ``sft:`` section of an experiment config: what `openforge sft` learns from and how long.

Its own module: the experiment config is long enough, and only the SFT command reads it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SftConfig(BaseModel):
    """Supervised fine-tuning on recorded sessions before RL (docs/trainer.md, "SFT")."""

    model_config = ConfigDict(extra="forbid")

    recordings: str = Field(
        description="The run in this config's store whose recorded sessions are learned from (its `name`)."
    )
    evaluation: str | None = Field(
        None, description="An evaluation id of that run (`openforge eval --id`): its recordings instead of the run's iterations."
    )
    iterations: list[int] | None = Field(None, description="The run's iterations to read; unset: every recorded one.")
    keep: Literal["passed", "all"] = Field(
        "passed", description="`passed`: only sessions the verifier passed (rejection sampling); `all`: every graded one."
    )
    held_out: float = Field(0.2, ge=0, lt=1, description="Share of sessions held out to choose the epoch by validation loss.")
    max_epochs: int = Field(3, ge=1, description="Passes over the training sessions; the best by validation loss is kept.")
    learning_rate: float = Field(1e-5, gt=0)
    micro_batch_size: int = Field(4, ge=1, description="Rows per forward/backward pass and optimizer step.")
