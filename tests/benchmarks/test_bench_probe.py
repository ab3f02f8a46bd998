"""bench_probe.py's arithmetic: the measured gains it reads back, its rank correlation, the pairs it reports."""

from __future__ import annotations

import pytest

from benchmarks import bench_learning
from benchmarks.bench_probe import EXAMPLES, discordant, gain_of, measured_gain, spearman, stored_gain
from benchmarks.doc_sections import DOC
from benchmarks.seeds.results import Arm, GradedRollout, IterationResult, SeedRun
from components.trainer.learnability import Learnability, ProbeReport

_DOC = """# Benchmarks

## Learning through real harnesses: codex

Command: `y` (the `t` make target), at commit 7655c2c. Date: 2026-12-01 23:05 UTC. Machine: m.

- codex: **PASS** the shuffled-reward control does not rise clearly: 0.344 -> 0.625, gain +0.281 = 2.3 standard errors
- codex: **PASS** pass rate rises clearly (last 2 iterations vs first 2 iterations: gain >= 0.15 and >= 3 standard errors): 0.344 -> 0.969, gain +0.625 = 6.9 standard errors
"""


def test_the_gain_is_the_real_runs_not_the_controls() -> None:
    codex = measured_gain(_DOC, "Learning through real harnesses: codex")
    assert (codex.first, codex.last, codex.gain, codex.quantity) == (0.344, 0.969, 0.625, "pass rate")
    assert codex.made == "7655c2c, 2026-12-01 23:05 UTC"


def _learning_run(seed: int, rewards: list[float], date: str) -> SeedRun:
    iterations = [
        IterationResult(iteration=k, rollouts=[GradedRollout(task_id="vowels", reward=r, passed=False)] * 2,
                        trained_tokens=None, wall_s=None)
        for k, r in enumerate(rewards)
    ]  # fmt: skip
    return SeedRun(arm=Arm.REAL, seed=seed, commit="abc1234", date=date, machine="m", wall_s=1.0, iterations=iterations)


def test_bench_learnings_gain_pools_the_stored_real_seeds_first_window_against_last() -> None:
    # 7 iterations: windows of 2
    runs = {
        Arm.REAL: {0: _learning_run(0, [0.4, 0.4, 0.5, 0.5, 0.5, 0.6, 0.6], "2026-12-07 19:00 UTC"),
                   1: _learning_run(1, [0.2, 0.4, 0.5, 0.5, 0.5, 0.8, 1.0], "2026-12-07 18:00 UTC")},
        Arm.CONTROL: {0: _learning_run(0, [0.9] * 7, "2026-12-07 18:30 UTC")},
    }  # fmt: skip
    gain = stored_gain(runs, bench_learning.window, "mean reward")
    assert (gain.first, gain.last, gain.gain) == (0.35, 0.75, 0.4)
    assert gain.made == "abc1234, 2026-12-07 18:00 UTC, 2 seeds"
    assert stored_gain(runs, bench_learning.window, "pass rate").gain == 0.0  # no rollout passed
    with pytest.raises(LookupError, match="run its benchmark first"):
        stored_gain({Arm.REAL: {}, Arm.CONTROL: {}}, bench_learning.window, "mean reward")


def test_every_example_has_a_measured_gain_to_compare_with() -> None:
    text = DOC.read_text()
    for example in EXAMPLES:
        assert gain_of(example, text).gain is not None


def test_spearman_uses_average_ranks_and_refuses_a_constant_column() -> None:
    assert spearman([0.1, 0.2, 0.3, 0.4], [1.0, 2.0, 3.0, 4.0]) == 1.0
    assert spearman([0.4, 0.3, 0.2, 0.1], [1.0, 2.0, 3.0, 4.0]) == -1.0
    assert round(spearman([0.5, 0.5, 0.25, 1.0], [0.6, 0.5, 0.4, 0.2]), 3) == -0.316
    assert spearman([0.5, 0.5, 0.5], [1.0, 2.0, 3.0]) is None


def _row(name: str, mixed: float, gain: float) -> tuple:
    found = Learnability(
        rollouts=1, groups=1, mixed_share=mixed, sampled_tokens=0, trainable_tokens=0, token_share=None,
        group_kinds={}, statuses={}, unusable={}, failure_examples={}, verdict="", reasons=[], tasks=[],
    )  # fmt: skip
    report = ProbeReport(experiment=name, eval_id="e", harness=name, task_source="t", checkpoint={},
                         samples_per_task=4, findings=found)  # fmt: skip
    example = next(e for e in EXAMPLES if e.name == name)
    measured = type("M", (), {"gain": gain})()
    return example, measured, report, 0.0


def test_discordant_pairs_name_where_the_order_fails() -> None:
    rows = [_row("learning", 1.0, 0.176), _row("codex", 0.5, 0.625), _row("claude-code", 0.5, 0.5)]
    assert discordant(rows) == [
        "the probe rates learning above codex; codex's measured gain is larger",
        "the probe rates learning above claude-code; claude-code's measured gain is larger",
    ]  # codex vs claude-code: a tie in the prediction, not counted
