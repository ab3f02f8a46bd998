"""Show the pipeline learning: examples/learning.yaml over 3 seeds, against the same seeds with
shuffled rewards.

    .venv/bin/python benchmarks/bench_learning.py             # the `bench-learning` make target
    .venv/bin/python benchmarks/bench_learning.py --render    # only re-render from the stored results

Each seed runs every iteration of the config through ``run_experiment`` twice, each time in
a fresh store under .bench/learning/: the real run, and a control whose train step learns
from rewards permuted within each group (``algorithm.shuffle_rewards``). A seed sets the
run's ``seed`` and ``model.tiny_seed``. Each run's graded rollouts (the verifier's reward,
never the control's permuted one) are stored under benchmarks/results/learning/ the moment
it ends, so the benchmark resumes seed by seed and can span sessions; the "Learning"
section of docs/benchmarks.md and its plot are rendered from those files alone.

The verdict (benchmarks/seeds/bound.py): the mean reward of the last quarter of the
iterations beats the first quarter's in every seed, the mean gain less a one-sided 95% t
bound across seeds is above zero, and the control's is not. Exits 1 when it fails, 2 while
seeds are missing.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, REPO, write_section
from benchmarks.pipeline_runs import config_summary
from benchmarks.seeds.bound import SeedsVerdict, judge_seeds
from benchmarks.seeds.report import provenance, seed_table
from benchmarks.seeds.results import Arm, SeedRun, stored_runs
from benchmarks.seeds.runs import log_line
from components.core.config import load_config

SECTION = "Learning"
CONFIG = REPO / "examples" / "learning.yaml"
FIGURE = REPO / "docs" / "figures" / "learning-curve.png"
RESULTS = REPO / "benchmarks" / "results" / "learning"
SEEDS = 3
COMMAND = ".venv/bin/python benchmarks/bench_learning.py"


def window(iterations: int) -> int:
    """The first and the last quarter of a run, rounded, one iteration at least."""
    return max(1, round(iterations / 4))


def judge(runs: dict[Arm, dict[int, SeedRun]]) -> SeedsVerdict:
    """Per seed with both arms stored: the mean reward's gain, last window against first."""
    return judge_seeds(runs, "reward", "mean reward", window)


def save_plot(runs: dict[Arm, dict[int, SeedRun]], path: Path) -> None:
    """Each seed's mean reward by iteration: the real runs solid, the controls dashed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 3.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    colors = {}
    for arm, style in ((Arm.REAL, "-o"), (Arm.CONTROL, "--x")):
        for seed, run in sorted(runs[arm].items()):
            curve = [math.nan if v is None else v for v in run.curve("reward_mean")]
            line = axes.plot(range(len(curve)), curve, style, color=colors.get(seed), label=f"seed {seed}, {arm.value}")
            colors.setdefault(seed, line[0].get_color())
    axes.set_xlabel("iteration")
    axes.set_ylabel("mean reward")
    axes.set_title("Mean reward by iteration, per seed (examples/learning.yaml)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: the same runs give the same file


def section_markdown(runs: dict[Arm, dict[int, SeedRun]]) -> str:
    config = load_config(CONFIG)
    relative = os.path.relpath(FIGURE, DOC.parent)
    size = window(config.iterations)
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{COMMAND}` (the `bench-learning` make target); rendered from `benchmarks/results/learning/`.",
        provenance(runs),
        "",
        f"Config: `examples/learning.yaml`: {config_summary(config, seeded=True)}; dense rewards (the share of vowels in the "
        "answer, which the policy writes itself: no candidates), the tiny random-init CPU model (dev engine). Each "
        "seed sets the run's `seed` and `model.tiny_seed`; the control learns from rewards shuffled within each "
        "group, so a rise it shares comes from something other than the reward (examples/learning.yaml says why "
        "this reward and not a repetition one).",
        "",
        *seed_table(runs, "reward_mean"),
        "",
        "*mean reward by iteration* = the verifier's reward averaged over the iteration's graded rollouts; *rise* = "
        "the last iteration's less the first's; *wall s* = both runs of the seed. Each seed's gain below compares the "
        f"last {size} iteration(s) with the first {size}.",
        "",
        f"![Mean reward by iteration, per seed]({relative})",
        "",
        *judge(runs).lines(),
    ]
    return "\n".join(lines) + "\n"


def render(doc: bool, seeds: int = SEEDS) -> int:
    """The section from the stored results (the verdict asks for 3 seeds whatever ``seeds`` is)."""
    runs = stored_runs(RESULTS)
    section = section_markdown(runs)
    print(section)
    if doc:
        save_plot(runs, FIGURE)
        write_section(SECTION, section)
        log_line(f"wrote the {SECTION!r} section of {DOC} and {FIGURE}")
    judged = judge(runs)
    return 0 if judged.ok else (1 if judged.complete else 2)


def main() -> None:
    from benchmarks.seeds.runs import seeded_main

    seeded_main(__doc__.splitlines()[0], CONFIG, RESULTS, REPO / ".bench" / "learning", SEEDS, render)


if __name__ == "__main__":
    main()
