"""What a rollout produced (the runner's outcome) and what scoring made of it (the reward).

These two records are the contracts between the rollout, reward and trainer steps; each
step reads the previous one's record and nothing else.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

OUTCOME_SCHEMA_VERSION = "1.0"


class RolloutStatus(str, Enum):
    """How a rollout ended. Only ``ok`` rollouts carry a verifier verdict."""

    OK = "ok"
    HARNESS_ERROR = "harness_error"  # the harness crashed or exited non-zero
    TIMEOUT = "timeout"  # the time limit (start-up included) ran out
    VERIFIER_ERROR = "verifier_error"  # the verifier itself crashed or answered nonsense
    INFRA_ERROR = "infra_error"  # proxy, engine or storage failed: not the agent's fault
    # The harness stopped after the engine refused a call for context length: the policy's
    # own outputs (and the tool output they asked for) filled the context. Graded like a
    # timeout (reward 0, usable); see docs/reliability.md, "Failure taxonomy".
    CONTEXT_OVERFLOW = "context_overflow"
    # A GUI rollout's harness made more model calls than harness.max_turns and was stopped
    # (an agent that never ends, like cua-agent ignoring its own terminate action). The
    # agent's doing: graded like a timeout (reward 0, usable).
    STEP_LIMIT = "step_limit"
    # Stopped by the straggler cut (rollout.finish_fraction): the iteration stopped waiting,
    # so its result says nothing about the agent. Masked, never graded; docs/reliability.md.
    CUT = "cut"


class Outcome(BaseModel):
    """One rollout's result, written by the rollout runner as ``outcomes/<rollout_id>.json``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = OUTCOME_SCHEMA_VERSION
    rollout_id: str
    task_id: str
    sample_index: int = Field(ge=0)
    iteration: int = Field(ge=0)
    status: RolloutStatus
    reward: float | None = Field(None, description="Verifier score; None unless status is ok.")
    passed: bool | None = Field(None, description="Verifier verdict; None unless status is ok.")
    details: str = Field("", description="Human-readable reason for the status.")
    harness_exit_code: int | None = None
    final_answer: str | None = None
    num_calls: int = Field(0, ge=0, description="Model calls the proxy recorded for this rollout.")
    duration_s: float = Field(0.0, ge=0)
    verifier_output: str = Field("", description="Tail of the verifier's output.")
    extra: dict[str, Any] = Field(default_factory=dict)


class RewardRecord(BaseModel):
    """The reward scoring assigned to one rollout, and whether training may use it."""

    model_config = ConfigDict(extra="forbid")

    rollout_id: str
    task_id: str
    group_id: str = Field(description="GRPO group (iteration and task): rollouts compared with each other.")
    reward: float
    usable: bool = Field(description="False for rollouts training must mask out (infra errors, broken captures).")
    status: RolloutStatus
