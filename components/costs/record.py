"""One step run's cost record: how long it ran, the CPU it burned and the GPUs it held.

Where each record lives is ``components/costs/keys.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from components.core.config import ExperimentConfig

# The steps that hold GPUs (pipelines/pod_specs.py places the same two on the GPU pool).
SERVE, TRAIN = "serve", "train"


class CostRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str = Field(description="The step's name (prepare, serve, rollout, score, train, commit, report).")
    part: str | None = Field(None, description="Which run of a fanned-out step: the rollout id.")
    iteration: int = Field(ge=0)
    started_at: float = Field(description="Unix time the step's body started.")
    ended_at: float = Field(description="Unix time it ended (for serve: when it was stopped).")
    wall_s: float = Field(ge=0)
    cpu_self_s: float = Field(ge=0, description="User + system CPU of the step's own process.")
    cpu_children_s: float = Field(
        ge=0, description="User + system CPU of the child processes it waited for (harness, verifier, vLLM)."
    )
    gpus: int = Field(ge=0, description="GPUs the step held, from the config (0 on CPU).")
    exit_code: int = Field(description="0: the step succeeded; otherwise the code it exited with.")

    @property
    def cpu_s(self) -> float:
        return self.cpu_self_s + self.cpu_children_s

    @property
    def gpu_s(self) -> float:
        """GPU-seconds held: the allocation times the wall time, not the GPUs' utilization."""
        return self.gpus * self.wall_s


def held_gpus(config: ExperimentConfig, step: str, visible: int | None = None) -> int:
    """GPUs ``step`` holds: what the engine and trainer are told to use (vLLM's tensor-parallel
    size, veRL's world size), capped by the GPUs this process can see (``visible``; read from
    the machine when None), so vLLM's CPU build, or a CUDA trainer config run where no GPU
    is, holds none.

    Not the pod's request (``cluster.resources``), which the local executor ignores.
    """
    if step == SERVE:
        configured = config.engine.vllm.tensor_parallel_size if config.engine.kind == "vllm" else 0
    elif step == TRAIN:
        trainer = config.trainer
        configured = trainer.world_size if trainer.backend == "verl" and trainer.device == "cuda" else 0
    else:
        return 0
    return min(configured, visible_gpus() if visible is None else visible)


def visible_gpus() -> int:
    """NVIDIA GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` where set, else the device
    nodes present (a container sees only the GPUs allocated to its pod)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return len([d for d in listed.split(",") if d.strip() and d.strip() != "-1"])
    return len([p for p in Path("/dev").glob("nvidia*") if p.name.removeprefix("nvidia").isdigit()])
