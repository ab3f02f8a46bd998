"""The verdict of a learning benchmark over seeds: a gain in every seed, and the mean gain
less a one-sided 95% t bound across seeds above zero, while the shuffled-reward control's
gains fail that same bound (benchmarks/verdict.py, ``seed_bound``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from benchmarks.seeds.results import Arm, SeedRun
from benchmarks.verdict import SeedBound, seed_bound

MIN_SEEDS = 3


@dataclass(frozen=True)
class SeedsVerdict:
    quantity: str  # what the gains are of, as the doc says it: "mean reward", "pass rate"
    real: tuple[float | None, ...]  # per complete seed (both arms stored), seed order; None: nothing graded
    control: tuple[float | None, ...]
    min_gain: float  # what counts as a gain in one seed

    @property
    def complete(self) -> bool:
        return len(self.real) >= MIN_SEEDS

    def bound(self, gains: Sequence[float | None]) -> SeedBound | None:
        known = [g for g in gains if g is not None]
        return seed_bound(known) if len(known) >= 2 else None

    @property
    def every_seed(self) -> bool:
        return bool(self.real) and all(g is not None and g > self.min_gain for g in self.real)

    @property
    def ok(self) -> bool:
        real, control = self.bound(self.real), self.bound(self.control)
        return self.complete and self.every_seed and real is not None and real.holds and control is not None and not control.holds

    def lines(self) -> list[str]:
        def mark(ok: bool) -> str:
            return "**PASS**" if ok else "**FAIL**"

        gains = ", ".join("-" if g is None else f"{g:+.3f}" for g in self.real) or "none yet"
        lines = [] if self.complete else [
            f"**INCOMPLETE**: {len(self.real)} of {MIN_SEEDS} seeds stored with both arms; run the command again to resume"
        ]  # fmt: skip
        lines.append(f"{mark(self.every_seed)} the {self.quantity} gains more than {self.min_gain:g} in every seed: {gains}")
        real, control = self.bound(self.real), self.bound(self.control)
        if real is not None and control is not None:
            lines.append(f"{mark(real.holds)} the gain's one-sided 95% lower bound across seeds is above zero: {real.figures()}")
            lines.append(f"{mark(not control.holds)} the shuffled-reward control's is not: {control.figures()}")
        return [f"- {line}" for line in lines]


def judge_seeds(
    runs: Mapping[Arm, Mapping[int, SeedRun]], quantity: str, label: str, window: Callable[[int], int]
) -> SeedsVerdict:
    """Per seed with both arms stored: the gain in ``quantity`` (a rollout's ``reward`` or
    ``passed``), its last ``window(iterations)`` iterations against its first."""
    pairs = []
    for seed in sorted(set(runs[Arm.REAL]) & set(runs[Arm.CONTROL])):
        real, control = runs[Arm.REAL][seed], runs[Arm.CONTROL][seed]
        size = window(len(real.iterations))
        pairs.append((real.window_gain(quantity, size), control.window_gain(quantity, size)))
    # A seed whose gain is unknown (an iteration with nothing graded) fails "every seed" and is
    # left out of the bounds.
    return SeedsVerdict(label, tuple(r for r, _ in pairs), tuple(c for _, c in pairs), min_gain=0.0)
