"""What a seeded learning benchmark's doc section shows of its stored runs: each seed's curve
for the real run and the control, side by side, and where and when the runs were made."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from benchmarks.seeds.results import Arm, SeedRun

QUANTITIES = {"pass_rate": "pass rate", "reward_mean": "mean reward"}


def _number(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def curve_text(run: SeedRun | None, quantity: str) -> str:
    """``0.625 → 0.312 → 0.938``: the seed's value at each iteration."""
    if run is None:
        return "not run"
    return " → ".join(_number(v) for v in run.curve(quantity))


def seed_table(runs: Mapping[Arm, Mapping[int, SeedRun]], quantity: str) -> list[str]:
    """One row per seed: the real run's curve and rise, the control's, and their wall times."""
    label = QUANTITIES[quantity]
    head = ["seed", f"real: {label} by iteration", "real rise", f"control: {label} by iteration", "control rise", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|---:|---|---:|---|---:|---:|"]
    for seed in sorted(set(runs[Arm.REAL]) | set(runs[Arm.CONTROL])):
        real, control = runs[Arm.REAL].get(seed), runs[Arm.CONTROL].get(seed)
        wall = sum(r.wall_s for r in (real, control) if r is not None)
        cells = [
            str(seed),
            curve_text(real, quantity), _number(real.rise(quantity) if real else None, sign=True),
            curve_text(control, quantity), _number(control.rise(quantity) if control else None, sign=True),
            f"{wall:.0f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def rises(runs: Mapping[int, SeedRun], quantity: str) -> list[float]:
    """Each stored seed's rise (seed order), leaving out a seed with an iteration nothing graded."""
    out = [runs[seed].rise(quantity) for seed in sorted(runs)]
    return [r for r in out if r is not None]


def mean_or_none(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def provenance(runs: Mapping[Arm, Mapping[int, SeedRun]]) -> str:
    """The commits, dates and machines the stored runs were made on, and their wall time."""
    every = [run for by_seed in runs.values() for run in by_seed.values()]
    if not every:
        return "No run is stored yet."
    commits = sorted({run.commit for run in every})
    dates = sorted(run.date for run in every)
    machines = sorted({run.machine for run in every})
    hours = sum(run.wall_s for run in every) / 3600
    return (
        f"Runs made {dates[0]} to {dates[-1]}, at commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}; "
        f"machine{'s' if len(machines) > 1 else ''}: {'; '.join(machines)}. Wall time of all {len(every)} runs: "
        f"{hours:.1f} h (each run's whole `run_experiment` call)."
    )
