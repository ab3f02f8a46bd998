"""The quickstart's wall time with overlapped iterations against without, in one benchmark run.

The same config (examples/quickstart.yaml run for ``ITERATIONS`` iterations) twice, each in
a fresh store: ``algorithm.max_staleness: 0`` (in order), then ``1`` (iteration k+1's
rollouts on checkpoint k while k trains, docs/trainer.md "Overlapped iterations"). Reports
each run's whole wall time, its iterations' times, its pass rate by iteration (the overlap
trains on one-version-old samples, so the curve is part of the result) and the ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_sections import Stamp
from benchmarks.pipeline_runs import bench_config, run_fresh

SUBSECTION = "Overlapped iterations against in order, the quickstart"
ITERATIONS = 4
STALENESS = (0, 1)


@dataclass(frozen=True)
class OverlapRun:
    max_staleness: int
    wall_s: float
    iteration_s: tuple[float, ...]
    pass_at_1: tuple[float, ...]
    policy_lag: tuple[float, ...]


@dataclass(frozen=True)
class OverlapFigures(Stamp):
    runs: tuple[OverlapRun, ...]


def measure(repo: Path, workdir: Path, log) -> tuple[OverlapRun, ...]:
    runs = []
    for staleness in STALENESS:
        root = workdir / f"overlap-{staleness}"
        overrides = {"iterations": ITERATIONS, "algorithm.max_staleness": staleness}
        config = bench_config(repo / "examples" / "quickstart.yaml", root, overrides)
        log(f"quickstart, {ITERATIONS} iterations, max_staleness {staleness}")
        finished = run_fresh(config, root)
        logged = [finished.logged[k] for k in range(ITERATIONS)]
        runs.append(
            OverlapRun(
                max_staleness=staleness,
                wall_s=finished.wall_s,
                iteration_s=tuple(m["time/iteration_s"] for m in logged),
                pass_at_1=tuple(m.get("pass_at_1", float("nan")) for m in logged),
                policy_lag=tuple(m.get("batch/policy_lag_mean", float("nan")) for m in logged),
            )
        )
    return tuple(runs)


def _ratio(figures: OverlapFigures) -> float:
    in_order, overlapped = figures.runs
    return in_order.wall_s / overlapped.wall_s


def terminal_lines(figures: OverlapFigures) -> list[str]:
    lines = [f"max_staleness {r.max_staleness}: {r.wall_s:.1f} s" for r in figures.runs]
    return [*lines, f"in order / overlapped: {_ratio(figures):.2f}x"]


def subsection_markdown(figures: OverlapFigures) -> str:
    rows = "\n".join(
        f"| {r.max_staleness} | {r.wall_s:.1f} | {' / '.join(f'{s:.0f}' for s in r.iteration_s)} | "
        f"{' / '.join(f'{p:.2f}' for p in r.pass_at_1)} | {' / '.join(f'{lag:.0f}' for lag in r.policy_lag)} |"
        for r in figures.runs
    )
    return f"""### {SUBSECTION}

{figures.stamp_line()}

`examples/quickstart.yaml` for {ITERATIONS} iterations, each run in a fresh store, in order (`algorithm.max_staleness: 0`) and then overlapped (`1`: iteration k+1's rollouts on checkpoint k while k trains). Wall time is `run_experiment`'s, set-up and summary included; an iteration's time is its workflow's (with overlap it also runs the next iteration's rollouts). Policy lag: `batch/policy_lag_mean`, versions between the sampling and the trained checkpoint.

| max_staleness | wall s | iterations s | pass@1 by iteration | policy lag by iteration |
|---|---:|---|---|---|
{rows}

In order / overlapped wall time: **{_ratio(figures):.2f}x**. The quickstart's update is about a second of each iteration (the tiny model; its rollouts are the rest), so the overlap has almost nothing to hide, while on this machine's 2 cores the next iteration's rollouts and engine compete with the train step and slow it: overlap pays where training is a large share of an iteration and serve and train have devices of their own, as on a cluster (`make bench-scale` models that). The pass rate shows the cost of sampling one version behind: each iteration's gain reaches the rollouts one iteration later.
"""
