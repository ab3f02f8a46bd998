"""Show the pipeline learning inside real harnesses: pass rate by iteration over 3 seeds, real vs shuffled rewards.

    .venv/bin/python benchmarks/bench_harness_learning.py            # the `bench-harness-learning` make target
    .venv/bin/python benchmarks/bench_harness_learning.py --harness cua-agent --harness browser-use   # `bench-gui-learning`
    .venv/bin/python benchmarks/bench_harness_learning.py --harness codex --render   # re-render from stored results
    .venv/bin/python benchmarks/bench_harness_learning.py --harness codex --iterations 2 --samples-per-task 2

For each harness, runs its example config (examples/<harness>.yaml, choice mode over
examples/tasks/shell; for cua-agent examples/desktop.yaml, choice mode over
examples/tasks/desktop with the tiny vision-language model reading each screenshot; for
browser-use examples/web.yaml, choice mode over the seeded web apps of examples/tasks/web)
for a fixed number of iterations through ``run_experiment``, per seed twice with seeded
sampling: the real run, and a control whose train step learns from rewards permuted within
each group (``algorithm.shuffle_rewards``). A seed sets the run's ``seed`` and
``model.tiny_seed``. Each run gets a fresh store under .bench/harness-learning/<harness>/,
and its graded rollouts, trained tokens and step times are stored under
benchmarks/results/harness-learning/<harness>/ the moment it ends, so the benchmark
resumes seed by seed and can span sessions. Each harness's "Learning through real
harnesses" section of docs/benchmarks.md is rendered from those files alone. Exits 1 when a
harness's verdict fails (harness_learning/report.py and seeds/bound.py say what it asks), 2
while seeds are missing. Other iterations or samples than the defaults store their results
under the work folder instead and leave the doc alone. Needs the harnesses installed
(`make harnesses`, or OPENFORGE_HARNESS_HOME pointing at them).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, REPO, write_section
from benchmarks.harness_learning import report
from benchmarks.pipeline_runs import config_summary, decisions_text, with_overrides
from benchmarks.seeds.bound import SeedsVerdict
from benchmarks.seeds.results import stored_runs
from components.core.config import ExperimentConfig, load_config

HARNESSES = ("claude-code", "codex")  # the default run; the GUI ones are `bench-gui-learning`'s
GUI_HARNESSES = ("cua-agent", "browser-use")
# Each harness's example config (examples/<name>.yaml).
EXAMPLES = {"claude-code": "claude-code", "codex": "codex", "cua-agent": "desktop", "browser-use": "web"}
ITERATIONS = 6
SEEDS = 3
RESULTS = REPO / "benchmarks" / "results" / "harness-learning"
# 4 tasks x 4 samples = 16 graded rollouts per iteration: a pass rate's standard error of
# at most 0.125, so a window of two iterations (32 rollouts) can show a 0.15 rise.
SAMPLES_PER_TASK = 4
# browser-use learns its web tasks within one update (0.583 -> 0.917 at 4 samples), so the
# first window already holds a learned iteration: 6 tasks x 4 samples measured a rise to
# 0.958 as 2.99 standard errors. 6 samples (36 rollouts an iteration) shrink them by 1.22.
HARNESS_SAMPLES = {"browser-use": 6}


def samples_per_task(harness: str) -> int:
    return HARNESS_SAMPLES.get(harness, SAMPLES_PER_TASK)


def config_path(harness: str) -> Path:
    return REPO / "examples" / f"{EXAMPLES[harness]}.yaml"


def setup_text(config: ExperimentConfig) -> str:
    decides = f"; {decisions_text(config)}" if config.engine.dev_mode == "choice" else ""
    return (
        f"Config: `examples/{EXAMPLES[config.harness.name]}.yaml`: {config_summary(config, seeded=True)}; the dev "
        f"engine in `{config.engine.dev_mode}` mode{decides}. Iterations, samples per task and seeded sampling are the "
        "benchmark's."
    )


def overrides(harness: str, iterations: int = ITERATIONS, samples: int | None = None) -> dict:
    return {
        "iterations": iterations,
        "rollout.samples_per_task": samples or samples_per_task(harness),
        "rollout.seeded_sampling": True,
        # A policy that has learned every task passes every rollout: its groups carry no signal,
        # and the train step would stop the run instead of measuring the iterations left.
        "algorithm.allow_empty_update": True,
    }


def results_folder(harness: str) -> Path:
    return RESULTS / harness


def command_of(harness: str) -> tuple[str, str]:
    """The make target that runs ``harness``, and its command."""
    command = ".venv/bin/python benchmarks/bench_harness_learning.py"
    if harness in GUI_HARNESSES:
        return command + "".join(f" --harness {h}" for h in GUI_HARNESSES), "bench-gui-learning"
    return command, "bench-harness-learning"


def section(harness: str, folder: Path | None = None) -> tuple[str, SeedsVerdict]:
    """``harness``'s section rendered from its stored results, and its verdict."""
    runs = stored_runs(folder or results_folder(harness))
    config = with_overrides(load_config(config_path(harness)), overrides(harness))
    command, target = command_of(harness)
    return report.section_markdown(harness, setup_text(config), command, target, runs), report.judge(runs)


def run(harnesses: list[str], seeds: int, iterations: int, samples: int | None, workdir: Path, doc: bool,
        render_only: bool = False) -> int:  # fmt: skip
    """``samples``: rollouts per task for every harness (default: each harness's own)."""
    from benchmarks.seeds.runs import log_line, run_missing

    os.chdir(REPO)  # the configs' relative task folders resolve from the repository
    default = iterations == ITERATIONS and (samples is None or all(samples == samples_per_task(h) for h in harnesses))
    verdicts = []
    for harness in harnesses:
        folder = results_folder(harness) if default else workdir / harness / "results"
        for seed in range(0 if render_only else seeds):
            run_missing(config_path(harness), folder, workdir / harness, [seed], log_line, overrides(harness, iterations, samples))
        text, judged = section(harness, folder)
        print(text)
        if doc and default:
            write_section(report.section_title(harness), text)
            log_line(f"wrote the {report.section_title(harness)!r} section of {DOC}")
        verdicts.append(judged)
    if all(v.ok for v in verdicts):
        return 0
    return 1 if all(v.complete for v in verdicts) else 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", action="append", choices=list(EXAMPLES),
                        help=f"harness to run, repeatable (default: {' and '.join(HARNESSES)})")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=SEEDS, help=f"seeds 0..N-1 to run or resume (default {SEEDS})")
    parser.add_argument("--render", action="store_true", help="only render the sections from the stored results")
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
    sys.exit(run(harnesses, args.seeds, args.iterations, args.samples_per_task, args.workdir.resolve(),
                 doc=not args.no_doc, render_only=args.render))  # fmt: skip


if __name__ == "__main__":
    main()
