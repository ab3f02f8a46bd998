"""Is a gain above zero across seeds? The learning benchmarks' bound: one gain per seed, the
spread across seeds as its error, so a seed's rollouts are never taken for independent draws."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


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
