"""Prices the user sets, and an iteration's costs in money: per step, per iteration, per trained token.

    cost = GPU-seconds / 3600 * gpu_hour + CPU-seconds / 3600 * cpu_hour + GB stored * storage_gb_month

GPU-seconds are the GPUs a step held times its wall time; storage is one month of
keeping what the iteration wrote (GB = 10^9 bytes, as clouds bill it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from components.costs.aggregate import IterationCosts, StepCosts

GB = 1e9
HOUR_S = 3600.0
FORMULA = "cost = GPU-s/3600 x gpu_hour + CPU-s/3600 x cpu_hour + GB stored x storage_gb_month"


class Prices(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpu_hour: float = Field(0.0, ge=0, description="Price of one GPU for one hour.")
    cpu_hour: float = Field(0.0, ge=0, description="Price of one CPU core for one hour.")
    storage_gb_month: float = Field(0.0, ge=0, description="Price of keeping 10^9 bytes for one month.")

    def compute(self, gpu_s: float, cpu_s: float) -> float:
        return gpu_s / HOUR_S * self.gpu_hour + cpu_s / HOUR_S * self.cpu_hour

    def storage(self, stored_bytes: float) -> float:
        return stored_bytes / GB * self.storage_gb_month


class StepBill(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str
    runs: int
    failed: int
    wall_s: float
    cpu_s: float
    gpus: int
    gpu_s: float
    cost: float


class IterationBill(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iteration: int
    steps: list[StepBill]
    wall_s: float
    cpu_s: float
    gpu_s: float
    stored_gb: float
    tokens_sampled: float | None
    tokens_trained: float | None
    compute_cost: float
    storage_cost: float
    cost: float
    cost_per_trained_token: float | None  # None: it trained no token
    rollouts_without_record: int
    steps_without_record: list[str]
    unreadable: list[str]


def _step_bill(line: StepCosts, prices: Prices) -> StepBill:
    return StepBill(
        step=line.step, runs=line.runs, failed=line.failed, wall_s=line.wall_s, cpu_s=line.cpu_s,
        gpus=line.gpus, gpu_s=line.gpu_s, cost=prices.compute(line.gpu_s, line.cpu_s),
    )  # fmt: skip


def bill(costs: IterationCosts, prices: Prices) -> IterationBill:
    compute = prices.compute(costs.gpu_s, costs.cpu_s)
    storage = prices.storage(costs.stored_bytes)
    total = compute + storage
    trained = costs.tokens_trained
    return IterationBill(
        iteration=costs.iteration,
        steps=[_step_bill(line, prices) for line in costs.steps],
        wall_s=costs.wall_s,
        cpu_s=costs.cpu_s,
        gpu_s=costs.gpu_s,
        stored_gb=costs.stored_bytes / GB,
        tokens_sampled=costs.tokens_sampled,
        tokens_trained=trained,
        compute_cost=compute,
        storage_cost=storage,
        cost=total,
        cost_per_trained_token=total / trained if trained else None,
        rollouts_without_record=costs.rollouts_without_record,
        steps_without_record=costs.steps_without_record,
        unreadable=costs.unreadable,
    )
