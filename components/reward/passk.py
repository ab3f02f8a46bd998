"""Unbiased pass@k and pass^k estimators from n samples of which c passed.

pass@k: the chance that at least one of k samples drawn without replacement from the n
passes, 1 - C(n-c, k) / C(n, k) (Chen et al., 2021). pass^k: the chance that all k pass,
C(c, k) / C(n, k) (tau-bench). Both are exact rationals of binomials; ``math.comb``
keeps them exact for any n rather than multiplying float ratios.
"""

from __future__ import annotations

from math import comb


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passed count c={c} must be between 0 and the sample count n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the sample count n={n}: the estimator needs n >= k")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k of the n samples passes."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k samples drawn from the n pass (pass^k)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)
