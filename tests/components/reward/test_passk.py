"""pass@k and pass^k equal the exact fraction over every way to draw k of the n samples."""

from __future__ import annotations

from itertools import combinations

import pytest

from components.reward import pass_at_k, pass_hat_k


def _enumerate(n: int, c: int, k: int) -> tuple[float, float]:
    samples = [True] * c + [False] * (n - c)
    draws = list(combinations(samples, k))
    return sum(any(d) for d in draws) / len(draws), sum(all(d) for d in draws) / len(draws)


@pytest.mark.parametrize("n", range(1, 8))
def test_estimators_match_brute_force_enumeration(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            any_pass, all_pass = _enumerate(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(any_pass, abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(all_pass, abs=1e-12), (n, c, k)


def test_pass_at_1_is_the_success_rate():
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)
    assert pass_hat_k(8, 3, 1) == pytest.approx(3 / 8)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (3, 4, 1), (3, 1, 0)])
def test_impossible_arguments_are_refused_with_the_reason(n, c, k):
    with pytest.raises(ValueError, match="between"):
        pass_at_k(n, c, k)
