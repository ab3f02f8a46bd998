"""Does a quantity rise clearly from the first iterations of a run to the last ones?

Shared by the learning benchmarks: each says what it compares (mean reward, pass rate),
over how many iterations, and how large a rise counts as clear. A rise is clear when the
mean of the last window's per-rollout values beats the first window's by at least
``min_gain`` (absolute) and by at least ``min_sigmas`` standard errors of the difference.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    first: float  # mean over the first `window` iterations' rollouts
    last: float
    gain: float
    sigmas: float  # gain / standard error of the difference
    window: int
    min_gain: float
    min_sigmas: float
    quantity: str = "mean reward"

    @property
    def clear(self) -> bool:
        return self.gain >= self.min_gain and self.sigmas >= self.min_sigmas

    def span(self) -> str:
        return "iteration" if self.window == 1 else f"{self.window} iterations"

    def figures(self) -> str:
        """The numbers alone: ``0.250 -> 0.600, gain +0.350 = 4.1 standard errors``."""
        return f"{self.first:.3f} -> {self.last:.3f}, gain {self.gain:+.3f} = {self.sigmas:.1f} standard errors"

    def text(self) -> str:
        mark = "PASS" if self.clear else "FAIL"
        return (
            f"**{mark}** {self.quantity} rises clearly (last {self.span()} vs first {self.span()}: gain >= "
            f"{self.min_gain:.2f} and >= {self.min_sigmas:.0f} standard errors): {self.figures()}"
        )


def compare(first: Sequence[float], last: Sequence[float], window: int, min_gain: float, min_sigmas: float,
            quantity: str = "mean reward") -> Verdict:  # fmt: skip
    """The verdict on per-rollout values of the first and the last ``window`` iterations.

    Each side needs two values at least (a standard error); a side whose values are all
    equal has none, so an equal-valued rise counts as infinitely many standard errors.
    """
    if len(first) < 2 or len(last) < 2:
        raise ValueError(
            f"a verdict needs at least 2 rollouts on each side (got {len(first)} first, {len(last)} last): "
            "run more iterations or more samples per task"
        )
    gain = statistics.fmean(last) - statistics.fmean(first)
    spread = math.sqrt(statistics.variance(first) / len(first) + statistics.variance(last) / len(last))
    sigmas = gain / spread if spread > 0 else (math.inf if gain > 0 else 0.0)
    return Verdict(statistics.fmean(first), statistics.fmean(last), gain, sigmas, window, min_gain, min_sigmas, quantity)


@dataclass(frozen=True)
class SeedBound:
    """Whether a per-seed gain is above zero across seeds: the mean gain less a one-sided
    95% t bound (``t`` standard errors across seeds, n - 1 degrees of freedom: 2.92 for 3 seeds)."""

    gains: tuple[float, ...]
    mean: float
    stderr: float
    t: float

    @property
    def lower(self) -> float:
        return self.mean - self.t * self.stderr

    @property
    def holds(self) -> bool:
        return len(self.gains) >= 2 and self.lower > 0

    def figures(self) -> str:
        return f"mean {self.mean:+.3f} - {self.t:.2f} x s.e. {self.stderr:.3f} = {self.lower:+.3f} over {len(self.gains)} seeds"


def seed_bound(gains: Sequence[float]) -> SeedBound:
    """The bound on ``gains``, one per seed (at least 2: the spread across seeds is the error)."""
    from scipy.stats import t as student_t

    if len(gains) < 2:
        raise ValueError(f"a bound across seeds needs at least 2 seeds (got {len(gains)}): run more seeds")
    stderr = statistics.stdev(gains) / math.sqrt(len(gains))
    return SeedBound(tuple(gains), statistics.fmean(gains), stderr, float(student_t.ppf(0.95, len(gains) - 1)))
