"""One measured iteration extrapolated to a stated scale (tasks, samples, GPUs, concurrency), formula shown.

Every figure is the measured one times a stated factor, and the report prints each
formula with its numbers, so a reader can redo the sum and disagree with an assumption:

- rollouts: linear in their number (R' = tasks x samples over the measured R);
- serve: its start-up (serve's start to the first rollout's) once, then its serving
  time scaled by the waves of concurrent rollouts, ceil(R'/C') over ceil(R/C);
- train: linear in trained tokens (as many per rollout as measured), and, when it was
  measured on g GPUs, times g/G (a perfect speed-up; none is assumed from a CPU run);
- GPUs: serve and train hold the same G GPUs, one after the other.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from components.costs.aggregate import ROLLOUT, IterationCosts, StepCosts
from components.costs.pricing import GB, Prices
from components.costs.record import SERVE, TRAIN

# Steps whose work grows with the number of rollouts (they read or write one file per rollout).
_PER_ROLLOUT = (ROLLOUT, "score", "commit")


class ScaleError(ValueError):
    """The measured iteration cannot carry an extrapolation; the message names what it lacks."""


class Scale(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(ge=1)
    samples: int = Field(ge=1, description="Rollouts per task.")
    gpus: int = Field(ge=1, description="GPUs serve and train hold (one node's).")
    concurrency: int = Field(ge=1, description="Rollouts running at once.")


class Extrapolation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scale: Scale
    from_iteration: int
    rollouts: int
    serve_wall_s: float
    train_wall_s: float
    wall_s: float
    gpu_s: float
    cpu_s: float
    stored_gb: float
    tokens_trained: float | None
    cost: float
    cost_per_trained_token: float | None
    formulas: list[str]
    assumptions: list[str]


def _f(value: float) -> str:
    return f"{value:.4g}"


def extrapolate(measured: IterationCosts, concurrency: int, scale: Scale, prices: Prices) -> Extrapolation:
    """Iteration ``measured`` (run with ``concurrency`` rollouts at once) at ``scale``, priced."""
    serve, rollout, train = measured.step(SERVE), measured.step(ROLLOUT), measured.step(TRAIN)
    if serve is None or rollout is None:
        raise ScaleError(
            f"iteration {measured.iteration} has no serve or rollout cost record (it ran no rollouts): "
            "extrapolate from an iteration that did (--iteration)"
        )
    count, target = rollout.runs, scale.tasks * scale.samples
    per_rollout = target / count
    waves, target_waves = math.ceil(count / concurrency), math.ceil(target / scale.concurrency)
    startup = min(max(rollout.started_at - serve.started_at, 0.0), serve.wall_s)
    serve_wall = startup + (serve.wall_s - startup) * target_waves / waves
    formulas = [
        f"R' = tasks x samples = {scale.tasks} x {scale.samples} = {target} rollouts; measured R = {count}, "
        f"f = R'/R = {_f(per_rollout)}",
        f"waves = ceil(R/C) = ceil({count}/{concurrency}) = {waves}; "
        f"waves' = ceil(R'/C') = ceil({target}/{scale.concurrency}) = {target_waves}",
        f"serve' = start-up + serving x waves'/waves = {_f(startup)} + {_f(serve.wall_s - startup)} x "
        f"{target_waves}/{waves} = {_f(serve_wall)} s",
    ]
    train_wall, tokens = _train(measured, train, per_rollout, scale, formulas)
    gpu_s = scale.gpus * (serve_wall + train_wall)
    formulas.append(f"GPU-s' = G x (serve' + train') = {scale.gpus} x ({_f(serve_wall)} + {_f(train_wall)}) = {_f(gpu_s)}")
    factors = {line.step: _factor(line, per_rollout, serve_wall, train_wall) for line in measured.steps}
    cpu_s = sum(line.cpu_s * factors[line.step] for line in measured.steps)
    formulas.append(
        "CPU-s' = sum of each step's CPU-s x its factor = "
        + " + ".join(f"{_f(line.cpu_s)} x {_f(factors[line.step])} ({line.step})" for line in measured.steps)
        + f" = {_f(cpu_s)}"
    )
    wall = sum(line.wall_s * factors[line.step] for line in measured.steps if line.step != ROLLOUT)
    formulas.append(f"wall' = each non-rollout step's wall x its factor, summed (rollouts run inside serve) = {_f(wall)} s")
    stored = (measured.iteration_bytes * per_rollout + measured.checkpoint_bytes) / GB
    formulas.append(
        f"GB' = iteration GB x f + checkpoint GB = {_f(measured.iteration_bytes / GB)} x {_f(per_rollout)} + "
        f"{_f(measured.checkpoint_bytes / GB)} = {_f(stored)}"
    )
    cost = prices.compute(gpu_s, cpu_s) + stored * prices.storage_gb_month
    formulas.append(
        f"cost' = GPU-s'/3600 x {prices.gpu_hour} + CPU-s'/3600 x {prices.cpu_hour} + GB' x {prices.storage_gb_month} "
        f"= {_f(cost)}"
    )
    per_token = cost / tokens if tokens else None
    if per_token is not None:
        formulas.append(f"per trained token = cost' / tokens' = {_f(cost)} / {_f(tokens)} = {per_token:.4g}")
    return Extrapolation(
        scale=scale, from_iteration=measured.iteration, rollouts=target, serve_wall_s=serve_wall, train_wall_s=train_wall,
        wall_s=wall, gpu_s=gpu_s, cpu_s=cpu_s, stored_gb=stored, tokens_trained=tokens, cost=cost,
        cost_per_trained_token=per_token, formulas=formulas, assumptions=_assumptions(train),
    )  # fmt: skip


def _train(measured: IterationCosts, train: StepCosts | None, per_rollout: float, scale: Scale, formulas: list[str]) -> tuple[float, float | None]:
    """Train's wall time and trained tokens at scale (0 and None: the iteration trained nothing)."""
    trained = measured.tokens_trained
    if train is None or not trained:
        formulas.append("train' = 0 s (the measured iteration trained no token: an evaluation, or an empty batch)")
        return 0.0, None
    tokens = trained * per_rollout
    speedup = train.gpus / scale.gpus if train.gpus else 1.0
    wall = train.wall_s * per_rollout * speedup
    why = f"g/G ({train.gpus}/{scale.gpus})" if train.gpus else "1 (measured on CPU: no GPU speed-up assumed)"
    formulas.append(f"tokens' = trained tokens x f = {_f(trained)} x {_f(per_rollout)} = {_f(tokens)}")
    formulas.append(f"train' = train x f x {why} = {_f(train.wall_s)} x {_f(per_rollout)} x {_f(speedup)} = {_f(wall)} s")
    return wall, tokens


def _factor(line: StepCosts, per_rollout: float, serve_wall: float, train_wall: float) -> float:
    if line.step in _PER_ROLLOUT:
        return per_rollout
    if line.step == SERVE:
        return serve_wall / line.wall_s if line.wall_s else 1.0
    if line.step == TRAIN:
        return train_wall / line.wall_s if line.wall_s else 1.0
    return 1.0  # prepare, an evaluation's report: one small file whatever the scale


def _assumptions(train: StepCosts | None) -> list[str]:
    said = [
        "A rollout costs at scale what it cost here (same tasks, harness, turns and tokens per rollout).",
        "The engine keeps up: a wave of C' concurrent rollouts takes as long as a measured wave; "
        "a G-GPU engine serving more at once than measured is not modelled.",
        "Serve's start-up is the time from its start to the first rollout's (pod clocks), paid once.",
        "Serve and train hold the same G GPUs one after the other; the node's other time is not billed.",
        "GPU-seconds are the allocation times wall time, not utilization.",
        "CPU-seconds are each step's process and the children it waited for; the proxy sidecar and the "
        "executor are not counted.",
        "The model is the one measured: the checkpoint's size and per-token times do not change.",
    ]
    if train is not None and not train.gpus:
        said.append("Train was measured on CPU: its time per token is a CPU's, likely far above a GPU's.")
    return said
