"""Rollouts per minute at each concurrency, the dev engine against vLLM's CPU build, in one run.

The same one-iteration experiment per engine and concurrency, each in a fresh store:
examples/vllm.yaml's tasks and harness (free-sampled answers of up to 48 tokens: choice
mode is the dev engine's alone), the CPU update (the update is not what is compared), the
engines alternating at each concurrency so that a drift in the machine's load hits both.
*Rollout phase* = the first rollout's start to the last one's end, from the run's cost
records; its rollouts per minute is what the engine and the harnesses sustain together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_sections import Stamp
from benchmarks.pipeline_runs import bench_config, run_fresh

SUBSECTION = "Rollouts per minute by concurrency, dev engine and vLLM"
ENGINES = ("dev", "vllm")
# concurrency -> samples per task (examples/tasks/dense has 3 tasks): every slot filled at least once.
SWEEP = {1: 2, 8: 8, 32: 11}


@dataclass(frozen=True)
class SweepRun:
    engine: str
    concurrency: int
    rollouts: int
    rollout_phase_s: float
    iteration_s: float

    @property
    def per_minute(self) -> float:
        return self.rollouts / self.rollout_phase_s * 60


@dataclass(frozen=True)
class EngineSweep(Stamp):
    runs: tuple[SweepRun, ...]
    skipped: str | None  # why vLLM did not run, if it did not


def measure(repo: Path, workdir: Path, log) -> tuple[tuple[SweepRun, ...], str | None]:
    """Every engine at every concurrency; vLLM only where `make vllm` installed it (else why not)."""
    from benchmarks.overhead.engines import vllm_python as find_vllm

    vllm_python, why_not = find_vllm(repo)
    engines = ENGINES if vllm_python is not None else ("dev",)
    runs = []
    for concurrency, samples in SWEEP.items():
        for engine in engines:
            root = workdir / f"sweep-{engine}-{concurrency}"
            overrides = {
                "iterations": 1, "rollout.concurrency": concurrency, "rollout.samples_per_task": samples,
                "engine.kind": engine, "trainer.backend": "cpu", "trainer.device": "cuda",
            }  # fmt: skip
            config = bench_config(repo / "examples" / "vllm.yaml", root, overrides)
            if vllm_python is not None:
                config.engine.vllm.python = str(vllm_python)
            log(f"{engine} engine, concurrency {concurrency}, {samples} samples per task")
            finished = run_fresh(config, root)
            runs.append(_sweep_run(config, engine, concurrency, finished.logged[0]["time/iteration_s"]))
    return tuple(runs), None if vllm_python is not None else why_not


def _sweep_run(config, engine: str, concurrency: int, iteration_s: float) -> SweepRun:
    from components.core.storage import RunLayout, open_store
    from components.costs.aggregate import ROLLOUT, read_records

    records, _ = read_records(open_store(config.storage.uri), RunLayout(config.name), 0)
    rollouts = [r for r in records if r.step == ROLLOUT]
    phase = max(r.ended_at for r in rollouts) - min(r.started_at for r in rollouts)
    return SweepRun(engine, concurrency, len(rollouts), phase, iteration_s)


def terminal_lines(sweep: EngineSweep) -> list[str]:
    lines = [f"{r.engine} at concurrency {r.concurrency}: {r.per_minute:.1f} rollouts/min" for r in sweep.runs]
    return lines + ([f"vLLM skipped: {sweep.skipped}"] if sweep.skipped else [])


def subsection_markdown(sweep: EngineSweep) -> str:
    by = {(r.engine, r.concurrency): r for r in sweep.runs}
    rows = []
    for concurrency in SWEEP:
        dev, vllm = by.get(("dev", concurrency)), by.get(("vllm", concurrency))
        cells = [f"{dev.rollouts}", f"{dev.per_minute:.1f} ({dev.rollout_phase_s:.0f} s)"]
        if vllm is not None:
            cells += [f"{vllm.per_minute:.1f} ({vllm.rollout_phase_s:.0f} s)", f"{vllm.per_minute / dev.per_minute:.2f}x"]
        else:
            cells += ["-", "-"]
        rows.append(f"| {concurrency} | " + " | ".join(cells) + " |")
    skipped = f"\n\nvLLM did not run: {sweep.skipped}." if sweep.skipped else ""
    return f"""### {SUBSECTION}

{sweep.stamp_line()}

One iteration of `examples/vllm.yaml`'s tasks (3 dense-reward tasks, the reference harness, one free-sampled answer of at most 48 tokens) per engine and concurrency, the tiny model, the CPU update; the engines alternate at each concurrency. Each cell: rollouts per minute over the rollout phase (first rollout's start to last one's end), and that phase.

| concurrency | rollouts | dev engine | vLLM (CPU build) | vLLM / dev |
|---|---:|---|---|---|
{chr(10).join(rows)}{skipped}

The last column is what vLLM's continuous batching buys over the dev engine's one call at a time, on 2 cores that every rollout's own processes (runner, proxy sidecar, harness, verifier) share with the engine: beyond a few rollouts at once both queue for cores as much as for the model. A GPU engine batches far more calls per step than this machine can run rollouts.
"""
