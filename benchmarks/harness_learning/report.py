"""The harness learning benchmark's verdict over seeds, tables and doc section, rendered from
its stored results alone (benchmarks/results/harness-learning/<harness>/)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from benchmarks.harness_learning.curve import OTHER, STEPS
from benchmarks.seeds.bound import SeedsVerdict, judge_seeds
from benchmarks.seeds.report import provenance, seed_table
from benchmarks.seeds.results import Arm, SeedRun

SECTION = "Learning through real harnesses"
# Each seed's gain: the pass rate of its last WINDOW iterations against its first WINDOW (fewer
# in a short run), the rollouts of a window pooled.
WINDOW = 2

Runs = Mapping[Arm, Mapping[int, SeedRun]]


def window(iterations: int) -> int:
    return max(1, min(WINDOW, iterations // 2))


def judge(runs: Runs) -> SeedsVerdict:
    """Per seed with both arms stored: the pass rate's gain, last window against first."""
    return judge_seeds(runs, "passed", "pass rate", window)


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.0f}" if values else "-"


def time_table(runs: Runs) -> list[str]:
    """Each iteration's wall time and its split by step, averaged over every stored run."""
    every = [run for by_seed in runs.values() for run in by_seed.values()]
    head = ["iteration", "runs", "wall s", *(f"{step} s" for step in STEPS), f"{OTHER} s", "trained tokens"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for k in range(max((len(run.iterations) for run in every), default=0)):
        points = [run.iterations[k] for run in every if len(run.iterations) > k]
        cells = [
            str(k), str(len(points)), _mean([p.wall_s for p in points if p.wall_s is not None]),
            *(_mean([p.steps[step] for p in points if step in p.steps]) for step in (*STEPS, OTHER)),
            _mean([p.trained_tokens for p in points if p.trained_tokens is not None]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_READING = (
    "*pass rate* = share of the iteration's graded rollouts whose verifier passed (read from each rollout's outcome, "
    "so the control's shuffled rewards never touch it; infrastructure failures left out); *rise* = the last "
    "iteration's less the first's; *wall s* = both runs of the seed. In the time table, *wall* = `time/iteration_s`; "
    "the pipeline records no per-step durations, so the step columns are measured from the executor's node events: "
    "*serve start* = the engine's start until it answered its readiness probe, *rollouts* = first rollout pod started "
    "to last one ended, *other* = the rest (between nodes: scheduling, MLflow, stopping the engine); *trained tokens* "
    "= `batch/trained_tokens`, the sampled tokens the loss saw. Seeded sampling seeds each call from the run's seed, "
    "the iteration, the rollout id and the turn: a seed's real run and its control draw the same random numbers in "
    "the same iteration, so what differs between them is the policy, which the rewards moved."
)


def section_title(harness: str) -> str:
    """Each harness has its own section, so a run of one harness keeps the others' figures."""
    return f"{SECTION}: {harness}"


def section_markdown(harness: str, setup: str, command: str, target: str, runs: Runs) -> str:
    size = window(max((len(r.iterations) for r in runs[Arm.REAL].values()), default=2 * WINDOW))
    lines = [
        f"## {section_title(harness)}",
        "",
        f"Command: `{command}` (the `{target}` make target); rendered from "
        f"`benchmarks/results/harness-learning/{harness}/`.",
        provenance(runs),
        "",
        "Each seed runs the harness's example config twice, with seeded sampling: the real run, and a control whose "
        "train step learns from rewards permuted within each group (`algorithm.shuffle_rewards`, docs/trainer.md). A "
        "seed sets the run's `seed` and `model.tiny_seed`. The real runs must raise the pass rate in every seed and "
        "beyond the noise across seeds; the controls must not, or the pipeline learns from something other than the "
        f"reward. Each seed's gain compares its last {size} iteration(s) with its first {size}.",
        "",
        setup,
        "",
        *seed_table(runs, "pass_rate"),
        "",
        *judge(runs).lines(),
        "",
        "Where an iteration's time goes:",
        "",
        *time_table(runs),
        "",
        _READING,
    ]
    return "\n".join(lines) + "\n"
