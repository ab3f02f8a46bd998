"""Stored runs of a seeded benchmark, made up from pass counts, for its verdict and section tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchmarks.seeds.results import Arm, GradedRollout, IterationResult, SeedRun


def passes_run(arm: Arm, seed: int, passes: Sequence[int], run_wall_s: float, rollouts: int = 16,
               **fields: object) -> SeedRun:  # fmt: skip
    """Iteration k has ``passes[k]`` of ``rollouts`` passing (reward 1, over 4 tasks); ``fields``
    are the iterations' other values (a callable of k, or the same for all)."""
    iterations = [
        IterationResult(
            iteration=k,
            rollouts=[GradedRollout(task_id=f"t{i % 4}", reward=float(i < n), passed=i < n) for i in range(rollouts)],
            **{name: value(k) if callable(value) else value for name, value in fields.items()},
        )
        for k, n in enumerate(passes)
    ]
    return SeedRun(arm=arm, seed=seed, commit="abc1234", date="2026-12-07 18:00 UTC", machine="2 cores",
                   wall_s=run_wall_s, iterations=iterations)  # fmt: skip


def both_arms(real: Sequence[Sequence[int]], control: Sequence[Sequence[int]],
              make: Callable[[Arm, int, Sequence[int]], SeedRun]) -> dict[Arm, dict[int, SeedRun]]:  # fmt: skip
    """Seeds 0.. of each arm, one list of pass counts per seed."""
    return {
        Arm.REAL: {seed: make(Arm.REAL, seed, p) for seed, p in enumerate(real)},
        Arm.CONTROL: {seed: make(Arm.CONTROL, seed, p) for seed, p in enumerate(control)},
    }
