"""Run the arms and seeds a seeded benchmark has not stored yet, storing each as it ends."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.doc_sections import REPO, commit_text, machine_summary, now_text
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
    each run gets a fresh store in ``workdir/<arm>-seed-<seed>``. Returns how many runs it made."""
    from components.core.storage import open_store

    made = 0
    for seed in seeds:
        for arm in Arm:
            if run_path(folder, arm, seed).exists():
                continue
            # A folder per run: MLflow keeps its SQLite engine per URI for the process, so a
            # database deleted and made again at the same path is read-only to it.
            root = workdir / f"{arm.value}-seed-{seed}"
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


def log_line(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def seeded_main(
    description: str, config: Path, results: Path, workdir: Path, seeds: int, render: Callable[[bool, int], int]
) -> None:
    """A seeded benchmark's command line: run or resume seeds 0..N-1, rendering the doc after
    each seed (a session cut short still leaves its seeds there), then exit with
    ``render(doc, seeds)``'s code."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, default=seeds, help=f"seeds 0..N-1 to run or resume (default {seeds})")
    parser.add_argument("--workdir", type=Path, default=workdir,
                        help="each run's store, MLflow database and executor folders (emptied per run)")  # fmt: skip
    parser.add_argument("--render", action="store_true", help="only render the doc from the stored results")
    parser.add_argument("--fresh", action="store_true", help="discard the stored results first and start over")
    parser.add_argument("--no-doc", action="store_true", help="do not touch the docs")
    args = parser.parse_args()
    if args.fresh:
        shutil.rmtree(results, ignore_errors=True)
    if not args.render:
        os.chdir(REPO)  # the config's relative task folder resolves from the repository
        for seed in range(args.seeds):
            if run_missing(config, results, args.workdir.resolve(), [seed], log_line) and not args.no_doc:
                render(True, args.seeds)
    sys.exit(render(not args.no_doc, args.seeds))
