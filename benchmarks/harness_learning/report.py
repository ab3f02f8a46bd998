"""The harness learning benchmark's verdicts, tables and doc section."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.harness_learning.curve import OTHER, STEPS, HarnessIteration
from benchmarks.verdict import Verdict, compare

SECTION = "Learning through real harnesses"
# A clear rise of the pass rate: the last WINDOW iterations beat the first WINDOW by at
# least CLEAR_GAIN and CLEAR_SIGMAS standard errors of the difference. A pass rate moves
# in steps of 1/rollouts, so the bar is higher than bench_learning's dense-reward one.
CLEAR_GAIN = 0.15
CLEAR_SIGMAS = 3.0
WINDOW = 2


def judge(points: Sequence[HarnessIteration]) -> Verdict:
    """Pass rate of the last iterations vs the first ones (WINDOW each, fewer in a short run)."""
    window = max(1, min(WINDOW, len(points) // 2))
    first = [float(p) for point in points[:window] for p in point.passed]
    last = [float(p) for point in points[-window:] for p in point.passed]
    return compare(first, last, window, CLEAR_GAIN, CLEAR_SIGMAS, quantity="pass rate")


@dataclass(frozen=True)
class HarnessVerdict:
    harness: str
    real: Verdict
    control: Verdict  # same rule, on the shuffled-reward run

    @property
    def ok(self) -> bool:
        """The real run rises clearly and the control does not."""
        return self.real.clear and not self.control.clear

    def lines(self) -> list[str]:
        control_mark = "FAIL" if self.control.clear else "PASS"
        control_says = "rises clearly: the pipeline learns from something other than the reward" if self.control.clear \
            else "does not rise clearly"  # fmt: skip
        return [
            f"{self.harness}: {self.real.text()}",
            f"{self.harness}: **{control_mark}** the shuffled-reward control {control_says}: {self.control.figures()}",
        ]


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def table_markdown(points: Sequence[HarnessIteration]) -> list[str]:
    head = ["iteration", "pass rate", "± s.e.", "graded", "reward mean", "trained tokens", "wall s",
            *(f"{step} s" for step in STEPS), f"{OTHER} s"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for p in points:
        cells = [
            str(p.iteration), _number(p.pass_rate, 3), _number(p.stderr, 3), str(len(p.passed)),
            _number(p.reward_mean, 3), _number(p.trained_tokens, 0), _number(p.wall_s, 0),
            *(_number(p.step_s.get(step), 0) for step in (*STEPS, OTHER)),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


@dataclass(frozen=True)
class HarnessRuns:
    harness: str
    setup: str  # one sentence: the config and what the benchmark set
    real: list[HarnessIteration]
    control: list[HarnessIteration]
    wall_s: tuple[float, float]  # the real run's, the control's

    def verdict(self) -> HarnessVerdict:
        return HarnessVerdict(self.harness, judge(self.real), judge(self.control))


_READING = (
    "*pass rate* = share of the iteration's graded rollouts whose verifier passed (read from each "
    "rollout's outcome, so the control's shuffled rewards never touch it); *± s.e.* its standard error; "
    "*graded* = rollouts the pass rate counts (infrastructure failures left out); *reward mean* = `reward/mean`, the "
    "verifier's; *trained tokens* = `batch/trained_tokens`, the sampled tokens the loss saw; *wall* = "
    "`time/iteration_s`. The pipeline records no per-step durations, so the step columns are measured "
    "from the executor's node events as the run's view received them: *serve start* = the engine's "
    "start until it answered its readiness probe, *rollouts* = first rollout pod started to last one "
    "ended, *other* = the rest of the wall time (between nodes: scheduling, MLflow, stopping the engine). "
    "Seeded sampling seeds each call from the run's seed, the iteration, the rollout id and the turn: the "
    "real run and its control draw the same random numbers in the same iteration, so what differs between "
    "them is the policy, which the rewards moved."
)


def section_title(harness: str) -> str:
    """Each harness has its own section, so a run of one harness keeps the other's figures."""
    return f"{SECTION}: {harness}"


def section_markdown(command: str, target: str, commit: str, date: str, machine: str, runs: HarnessRuns) -> str:
    real_s, control_s = runs.wall_s
    lines = [
        f"## {section_title(runs.harness)}",
        "",
        f"Command: `{command}` (the `{target}` make target), at commit {commit}. "
        f"Date: {date}. Machine: {machine}.",
        "",
        "The harness's example config runs twice from the same seed, with seeded sampling: the real run, "
        "and a control whose train step learns from rewards permuted within each group "
        "(`algorithm.shuffle_rewards`, docs/trainer.md). The real run must raise the pass rate clearly; "
        "the control must not, or the pipeline learns from something other than the reward. A control may "
        "still drift up a little: clipped GRPO on rewards that carry no signal tends to sharpen what the policy "
        "already prefers, and the two runs draw the same random numbers. The bar is therefore that it does not "
        "rise clearly (under 3 standard errors), not that it does not move.",
        "",
        runs.setup,
        "",
        f"Real run ({real_s:.0f} s in all):",
        "",
        *table_markdown(runs.real),
        "",
        f"Shuffled-reward control ({control_s:.0f} s in all):",
        "",
        *table_markdown(runs.control),
        "",
        *(f"- {line}" for line in runs.verdict().lines()),
        "",
        _READING,
    ]
    return "\n".join(lines) + "\n"
