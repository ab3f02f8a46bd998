"""Show the pipeline learning: run examples/learning.yaml and report the reward curve.

    .venv/bin/python benchmarks/bench_learning.py             # the `bench-learning` make target
    .venv/bin/python benchmarks/bench_learning.py --no-doc    # same run, docs untouched

Runs every iteration of the config (fixed seed) through ``run_experiment`` into a fresh
store under .bench/learning/, reads each iteration's rewards back from the store
(``rewards.json`` per rollout, ``metrics.json`` for the train figures), prints the curve,
saves a plot, and rewrites the "Learning" section of docs/benchmarks.md. Exits 1 when the
mean reward does not rise clearly (see ``CLEAR_GAIN`` and ``CLEAR_SIGMAS``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, REPO, machine_summary, now_text, write_section
from benchmarks.pipeline_runs import bench_config, config_summary, run_fresh
from benchmarks.verdict import Verdict, compare
from components.core.config import ExperimentConfig
from components.core.metrics import read_metrics
from components.core.storage import ArtifactStore, RunLayout, open_store

SECTION = "Learning"
CONFIG = REPO / "examples" / "learning.yaml"
FIGURE = REPO / "docs" / "figures" / "learning-curve.png"
# A clear rise: the mean reward of the last iterations beats that of the first ones by at
# least CLEAR_GAIN (absolute) and by at least CLEAR_SIGMAS standard errors of the difference.
CLEAR_GAIN = 0.10
CLEAR_SIGMAS = 3.0


@dataclass(frozen=True)
class IterationPoint:
    iteration: int
    rewards: list[float]  # one per usable rollout
    by_task: dict[str, float]  # mean reward per task
    train: dict[str, float]  # train/* metrics of this iteration's update
    seconds: float | None

    @property
    def mean(self) -> float:
        return statistics.fmean(self.rewards) if self.rewards else math.nan

    @property
    def stderr(self) -> float:
        return statistics.stdev(self.rewards) / math.sqrt(len(self.rewards)) if len(self.rewards) > 1 else math.nan


def read_curve(store: ArtifactStore, name: str, logged: dict[int, dict[str, float]]) -> list[IterationPoint]:
    """Each iteration's rewards (from the store) and iteration time (from the MLflow metrics)."""
    layout = RunLayout(name)
    points = []
    for iteration in sorted(logged):
        records = [r for r in json.loads(store.get_bytes(layout.rewards(iteration)))["records"] if r["usable"]]
        tasks: dict[str, list[float]] = {}
        for record in records:
            tasks.setdefault(record["task_id"], []).append(record["reward"])
        metrics = read_metrics(store, layout.metrics(iteration))
        points.append(
            IterationPoint(
                iteration=iteration,
                rewards=[r["reward"] for r in records],
                by_task={task: statistics.fmean(values) for task, values in sorted(tasks.items())},
                train={k: v for k, v in metrics.items() if k.startswith("train/")},
                seconds=logged[iteration].get("time/iteration_s"),
            )
        )
    return points


def judge(points: list[IterationPoint]) -> Verdict:
    """Compare the first and the last quarter of the run (rounded, at least one iteration each)."""
    window = max(1, round(len(points) / 4))
    first = [r for p in points[:window] for r in p.rewards]
    last = [r for p in points[-window:] for r in p.rewards]
    return compare(first, last, window, CLEAR_GAIN, CLEAR_SIGMAS)


def table_markdown(points: list[IterationPoint]) -> list[str]:
    tasks = sorted({t for p in points for t in p.by_task})
    head = ["iteration", "reward mean", "± s.e.", *tasks, "train loss", "grad norm", "entropy", "time s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for p in points:
        cells = [
            str(p.iteration), f"{p.mean:.3f}", f"{p.stderr:.3f}",
            *(f"{p.by_task[t]:.3f}" if t in p.by_task else "-" for t in tasks),
            *(f"{p.train[k]:.4f}" if k in p.train else "-" for k in ("train/loss", "train/grad_norm", "train/entropy")),
            f"{p.seconds:.0f}" if p.seconds is not None else "-",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def save_plot(points: list[IterationPoint], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    steps = [p.iteration for p in points]
    for task in sorted({t for p in points for t in p.by_task}):
        axes.plot(steps, [p.by_task.get(task, math.nan) for p in points], alpha=0.45, linewidth=1, label=task)
    axes.errorbar(steps, [p.mean for p in points], yerr=[p.stderr for p in points], color="black",
                  marker="o", linewidth=2, capsize=3, label="mean (± s.e.)")  # fmt: skip
    axes.set_xlabel("iteration")
    axes.set_ylabel("reward")
    axes.set_title("Mean reward by iteration (examples/learning.yaml)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def _setup_text(config: ExperimentConfig) -> str:
    return (
        f"Config: `examples/learning.yaml`: {config_summary(config)}; dense rewards, the tiny random-init CPU "
        "model (dev engine)."
    )


_WHY_VOWELS = (
    "Why vowels: the reward (share of vowels in the answer) moves only if the policy learns from it. "
    "Rewards for repetition, which the set held before, also rise when the policy merely collapses onto a "
    "few tokens: in an in-process simulation with this trainer, shuffling the rewards within each iteration "
    "left the vowel reward flat (0.33-0.47 after 6-7 iterations, 3 sampling seeds) while the true rewards "
    "raised it to 0.57-0.67 (5 of 5 seeds); shuffled rewards raised the repetition rewards as well. "
    "`examples/learning.yaml` says more. The engine samples without a fixed seed, so two runs differ in detail."
)


def section_markdown(command: str, date: str, machine: str, setup: str, points: list[IterationPoint],
                     verdict: Verdict, wall_s: float, figure: Path,
                     load: tuple[tuple[float, ...], tuple[float, ...]] | None = None) -> str:  # fmt: skip
    relative = os.path.relpath(figure, DOC.parent)
    load_text = ""
    if load is not None:
        before, after = (", ".join(f"{v:.1f}" for v in values) for values in load)
        load_text = f"; load average (1, 5, 15 min) {before} before the run, {after} after"
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{command}` (the `bench-learning` make target). Date: {date}. Machine: {machine}{load_text}.",
        "",
        setup,
        "",
        _WHY_VOWELS,
        "",
        f"Wall time of the whole run (`run_experiment`: every iteration, MLflow set-up, summary): {wall_s:.0f} s.",
        "",
        *table_markdown(points),
        "",
        "*reward mean* = mean verifier reward over the iteration's usable rollouts (read back from each "
        "iteration's `rewards.json` in the store); *± s.e.* its standard error; one column per task; "
        "*train loss*, *grad norm*, *entropy* = the update made after that iteration's rollouts "
        "(`metrics.json`); *time* = the iteration's wall time (`time/iteration_s` in MLflow).",
        "",
        f"![Mean reward by iteration]({relative})",
        "",
        f"- {verdict.text()}",
    ]
    return "\n".join(lines) + "\n"


def run(config_path: Path, workdir: Path, doc: bool) -> int:
    os.chdir(REPO)  # the config's relative task folder resolves from the repository
    date, load_before = now_text(), os.getloadavg()
    config = bench_config(config_path, workdir)
    finished = run_fresh(config, workdir)
    load = (load_before, os.getloadavg())
    store = open_store(config.storage.uri)
    points = read_curve(store, config.name, finished.logged)
    verdict = judge(points)
    print("\n".join(table_markdown(points)))
    print(f"wall time {finished.wall_s:.0f} s")
    print(verdict.text().replace("**", ""))
    if doc:
        save_plot(points, FIGURE)
        command = ".venv/bin/python benchmarks/bench_learning.py"
        if config_path != CONFIG:
            command += f" --config {os.path.relpath(config_path, REPO)}"
        section = section_markdown(command, date, machine_summary(), _setup_text(config), points, verdict,
                                   finished.wall_s, FIGURE, load)  # fmt: skip
        write_section(SECTION, section)
        print(f"wrote the {SECTION!r} section of {DOC} and {FIGURE}")
    return 0 if verdict.clear else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=CONFIG, help="experiment config (default: examples/learning.yaml)")
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "learning",
                        help="store, MLflow database and executor folders; emptied first (default: .bench/learning)")
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md or the figure")
    args = parser.parse_args()
    sys.exit(run(args.config.resolve(), args.workdir.resolve(), doc=not args.no_doc))


if __name__ == "__main__":
    main()
