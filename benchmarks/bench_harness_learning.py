"""Show the pipeline learning inside real harnesses: pass rate by iteration, real vs shuffled rewards.

    .venv/bin/python benchmarks/bench_harness_learning.py            # the `bench-harness-learning` make target
    .venv/bin/python benchmarks/bench_harness_learning.py --harness cua-agent --harness browser-use   # `bench-gui-learning`
    .venv/bin/python benchmarks/bench_harness_learning.py --harness codex --iterations 2 --samples-per-task 2 --no-doc

For each harness, runs its example config (examples/<harness>.yaml, choice mode over
examples/tasks/shell; for cua-agent examples/desktop.yaml, choice mode over
examples/tasks/desktop with the tiny vision-language model reading each screenshot; for
browser-use examples/web.yaml, choice mode over the seeded web apps of examples/tasks/web)
for a fixed number of iterations through ``run_experiment``, twice
from the same seed with seeded sampling: the real run, and a control whose train step
learns from rewards permuted within each group (``algorithm.shuffle_rewards``). Each run
gets a fresh store under .bench/harness-learning/<harness>/{real,control}/. Reports each
iteration's pass rate (verifier verdicts read from the store), mean reward, trained
tokens and where its wall time went, and rewrites the "Learning through real harnesses"
section of docs/benchmarks.md. Exits 1 when a real run's pass rate does not rise clearly
or a control's does (harness_learning/report.py says what "clearly" means).
Needs the harnesses installed (`make harnesses`, or OPENFORGE_HARNESS_HOME pointing at them).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, REPO, commit_text, machine_summary, now_text, write_section
from benchmarks.harness_learning import report
from benchmarks.harness_learning.curve import HarnessIteration, read_run
from benchmarks.overhead.probes import EventLog
from benchmarks.pipeline_runs import bench_config, config_summary, decisions_text, run_fresh
from components.core.config import ExperimentConfig
from components.core.storage import open_store

HARNESSES = ("claude-code", "codex")  # the default run; the GUI ones are `bench-gui-learning`'s
GUI_HARNESSES = ("cua-agent", "browser-use")
# Each harness's example config (examples/<name>.yaml).
EXAMPLES = {"claude-code": "claude-code", "codex": "codex", "cua-agent": "desktop", "browser-use": "web"}
ITERATIONS = 6
# 4 tasks x 4 samples = 16 graded rollouts per iteration: a pass rate's standard error of
# at most 0.125, so a window of two iterations (32 rollouts) can show a 0.15 rise.
SAMPLES_PER_TASK = 4
# browser-use learns its web tasks within one update (0.583 -> 0.917 at 4 samples), so the
# first window already holds a learned iteration: 6 tasks x 4 samples measured a rise to
# 0.958 as 2.99 standard errors. 6 samples (36 rollouts an iteration) shrink them by 1.22.
HARNESS_SAMPLES = {"browser-use": 6}


def samples_per_task(harness: str) -> int:
    return HARNESS_SAMPLES.get(harness, SAMPLES_PER_TASK)


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def timed_run(config: ExperimentConfig, root: Path) -> tuple[list[HarnessIteration], float]:
    """Run ``config`` afresh in ``root``; its iterations read back, and the run's wall time."""
    log = EventLog()
    with log.attached():
        finished = run_fresh(config, root)
    store = open_store(config.storage.uri)
    return read_run(store, config.name, finished.logged, log.iterations), finished.wall_s


def setup_text(config: ExperimentConfig) -> str:
    decides = f"; {decisions_text(config)}" if config.engine.dev_mode == "choice" else ""
    return (
        f"Config: `examples/{EXAMPLES[config.harness.name]}.yaml`: {config_summary(config)}; the dev engine in "
        f"`{config.engine.dev_mode}` mode{decides}. Iterations, samples per task and seeded sampling are the benchmark's."
    )


def bench_harness(harness: str, iterations: int, samples: int, workdir: Path) -> report.HarnessRuns:
    overrides = {
        "iterations": iterations,
        "rollout.samples_per_task": samples,
        "rollout.seeded_sampling": True,
        # A policy that has learned every task passes every rollout: its groups carry no signal,
        # and the train step would stop the run instead of measuring the iterations left.
        "algorithm.allow_empty_update": True,
    }
    path = REPO / "examples" / f"{EXAMPLES[harness]}.yaml"
    runs = {}
    for kind, shuffle in (("real", False), ("control", True)):
        root = workdir / harness / kind
        _log(f"{harness}: the {kind} run, {iterations} iteration(s), store in {root}")
        config = bench_config(path, root, {**overrides, "algorithm.shuffle_rewards": shuffle})
        runs[kind] = timed_run(config, root)
    (real, real_s), (control, control_s) = runs["real"], runs["control"]
    return report.HarnessRuns(harness, setup_text(config), real, control, (real_s, control_s))


def run(harnesses: list[str], iterations: int, samples: int | None, workdir: Path, doc: bool) -> int:
    """``samples``: rollouts per task for every harness (default: each harness's own)."""
    os.chdir(REPO)  # the configs' relative task folders resolve from the repository
    date, commit = now_text(), commit_text()
    results = []
    for harness in harnesses:
        runs = bench_harness(harness, iterations, samples or samples_per_task(harness), workdir)
        results.append(runs)
        for title, points in (("real", runs.real), ("control", runs.control)):
            print(f"\n{harness}, {title} run:\n" + "\n".join(report.table_markdown(points)))
        print("\n".join(line.replace("**", "") for line in runs.verdict().lines()))
    if doc:
        command = ".venv/bin/python benchmarks/bench_harness_learning.py"
        target = "bench-gui-learning" if set(harnesses) <= set(GUI_HARNESSES) else "bench-harness-learning"
        if list(harnesses) != list(HARNESSES):
            command += "".join(f" --harness {h}" for h in harnesses)
        if iterations != ITERATIONS:
            command += f" --iterations {iterations}"
        if samples is not None and any(samples != samples_per_task(h) for h in harnesses):
            command += f" --samples-per-task {samples}"
        for runs in results:
            title = report.section_title(runs.harness)
            write_section(title, report.section_markdown(command, target, commit, date, machine_summary(), runs))
            _log(f"wrote the {title!r} section of {DOC}")
    return 0 if all(r.verdict().ok for r in results) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", action="append", choices=list(EXAMPLES),
                        help=f"harness to run, repeatable (default: {' and '.join(HARNESSES)})")  # fmt: skip
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help=f"iterations per run (default {ITERATIONS})")
    parser.add_argument("--samples-per-task", type=int,
                        help=f"rollouts per task per iteration, the GRPO group size (default {SAMPLES_PER_TASK}; "
                             f"browser-use {HARNESS_SAMPLES['browser-use']})")  # fmt: skip
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "harness-learning",
                        help="stores, MLflow databases and executor folders; each run's emptied first")  # fmt: skip
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    args = parser.parse_args()
    if args.iterations < 2 or (args.samples_per_task is not None and args.samples_per_task < 2):
        parser.error("--iterations and --samples-per-task must be at least 2: a verdict compares first and last "
                     "iterations, and GRPO compares rollouts of a task")  # fmt: skip
    harnesses = args.harness or list(HARNESSES)
    sys.exit(run(harnesses, args.iterations, args.samples_per_task, args.workdir.resolve(), doc=not args.no_doc))


if __name__ == "__main__":
    main()
