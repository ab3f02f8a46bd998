"""Run the arms and seeds a seeded benchmark has not stored yet, storing each as it ends."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.doc_sections import commit_text, machine_summary, now_text
from benchmarks.harness_learning.curve import step_seconds
from benchmarks.overhead.probes import EventLog
from benchmarks.pipeline_runs import bench_config, run_fresh
from benchmarks.seeds.results import Arm, SeedRun, read_iterations, run_path, save_run


def seed_overrides(arm: Arm, seed: int) -> dict[str, Any]:
    """What one arm of one seed changes in the config: the run's seed and the tiny model's
    seed both, and whether the train step learns from shuffled rewards."""
    return {"seed": seed, "model.tiny_seed": seed, "algorithm.shuffle_rewards": arm is Arm.CONTROL}


def run_missing(
    config_path: Path,
    folder: Path,
    workdir: Path,
    seeds: Iterable[int],
    log: Callable[[str], None],
    overrides: Mapping[str, Any] | None = None,
) -> int:
    """Run every (seed, arm) with no stored result in ``folder``, seed by seed, real arm first;
    each run gets a fresh store in ``workdir/<arm>``. Returns how many runs it made."""
    from components.core.storage import open_store

    made = 0
    for seed in seeds:
        for arm in Arm:
            if run_path(folder, arm, seed).exists():
                continue
            root = workdir / arm.value
            config = bench_config(config_path, root, {**(overrides or {}), **seed_overrides(arm, seed)})
            date, commit, started = now_text(), commit_text(), time.monotonic()
            log(f"seed {seed}, {arm.value} run: {config.iterations} iterations, store in {root}")
            events = EventLog()
            with events.attached():
                finished = run_fresh(config, root)
            steps = {
                iteration: step_seconds(timed, finished.logged[iteration]["time/iteration_s"])
                for iteration, timed in events.iterations.items()
                if "time/iteration_s" in finished.logged.get(iteration, {})
            }
            run = SeedRun(
                arm=arm, seed=seed, commit=commit, date=date, machine=machine_summary(),
                wall_s=finished.wall_s,
                iterations=read_iterations(open_store(config.storage.uri), config.name, finished.logged, steps),
            )  # fmt: skip
            path = save_run(folder, run)
            made += 1
            curves = "; ".join(
                f"{label} " + " → ".join("-" if v is None else f"{v:.3f}" for v in run.curve(quantity))
                for quantity, label in (("pass_rate", "pass rate"), ("reward_mean", "mean reward"))
            )
            log(f"seed {seed}, {arm.value} run: {curves}, in {time.monotonic() - started:.0f} s; stored in {path}")
    return made
