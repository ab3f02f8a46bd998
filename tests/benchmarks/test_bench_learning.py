"""The learning benchmark's verdict over seeds, its plot and section, rendered from stored
results (no pipeline run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_learning as bench
from benchmarks.doc_sections import DOC, replace_section
from benchmarks.seeds.results import Arm, GradedRollout, IterationResult, SeedRun, stored_runs


def _run(arm: Arm, seed: int, means: list[float]) -> SeedRun:
    """7 iterations, each of two rollouts around ``mean``."""
    iterations = [
        IterationResult(
            iteration=k,
            rollouts=[GradedRollout(task_id="vowels", reward=m + d, passed=False) for d in (-0.01, 0.01)],
            trained_tokens=100.0, wall_s=90.0, train={"train/loss": 0.1},
        )
        for k, m in enumerate(means)
    ]  # fmt: skip
    return SeedRun(arm=arm, seed=seed, commit="abc1234", date="2026-12-07 18:00 UTC", machine="2 cores",
                   wall_s=700.0, iterations=iterations)  # fmt: skip


RISING = [0.40, 0.42, 0.45, 0.49, 0.53, 0.58, 0.64]  # windows of 2: 0.41 -> 0.61
FLAT = [0.40, 0.41, 0.40, 0.39, 0.40, 0.41, 0.40]


def _runs(real: list[list[float]], control: list[list[float]]) -> dict[Arm, dict[int, SeedRun]]:
    return {
        Arm.REAL: {seed: _run(Arm.REAL, seed, m) for seed, m in enumerate(real)},
        Arm.CONTROL: {seed: _run(Arm.CONTROL, seed, m) for seed, m in enumerate(control)},
    }


def test_three_rising_seeds_against_flat_controls_pass() -> None:
    judged = bench.judge(_runs([RISING, [m + 0.02 for m in RISING], [m - 0.03 for m in RISING]], [FLAT] * 3))
    assert judged.ok and judged.real == pytest.approx((0.2, 0.2, 0.2))
    assert "**PASS** the mean reward gains more than 0 in every seed" in "\n".join(judged.lines())


@pytest.mark.parametrize(
    ("real", "control"),
    [
        ([RISING, RISING, FLAT], [FLAT] * 3),  # one seed does not gain
        ([RISING] * 3, [RISING, [m + 0.01 for m in RISING], [m - 0.01 for m in RISING]]),  # the control rises as much
        ([RISING, [0.4] * 6 + [0.41], [0.4] * 6 + [0.5]], [FLAT] * 3),  # gains, but too spread for the bound
    ],
)
def test_each_part_of_the_verdict_can_fail(real, control) -> None:
    assert not bench.judge(_runs(real, control)).ok


def test_fewer_than_three_seeds_are_incomplete_and_an_unpaired_seed_waits_for_its_control() -> None:
    runs = _runs([RISING, RISING, RISING], [FLAT, FLAT])
    judged = bench.judge(runs)
    assert len(judged.real) == 2 and not judged.ok and not judged.complete
    assert "**INCOMPLETE**: 2 of 3 seeds" in bench.section_markdown(runs)


def test_the_section_has_each_seeds_curve_the_figure_and_the_verdict(tmp_path: Path) -> None:
    runs = _runs([RISING] * 3, [FLAT] * 3)
    figure = tmp_path / "curve.png"
    bench.save_plot(runs, figure)
    text = bench.section_markdown(runs)
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert text.startswith("## Learning\n") and "](figures/learning-curve.png)" in text
    assert "| 2 | 0.400 → 0.420 → 0.450 → 0.490 → 0.530 → 0.580 → 0.640 | +0.240 |" in text
    assert "over 3 seeds" in text and "**PASS** the shuffled-reward control's is not" in text


def test_the_doc_section_is_the_stored_results_rendered() -> None:
    """Re-rendering the stored results leaves docs/benchmarks.md as it is: a figure typed into
    the section, or results stored without their rendering, fails here."""
    doc = DOC.read_text()
    assert replace_section(doc, bench.SECTION, bench.section_markdown(stored_runs(bench.RESULTS))) == doc


def test_replacing_a_section_keeps_the_others() -> None:
    doc = "# Benchmarks\n\nintro\n\n## Recording proxy\n\nproxy figures\n\n## Learning\n\nold\n\n## Pipeline overhead\n\nx\n"

    replaced = replace_section(doc, "Learning", "## Learning\n\nnew\n")
    appended = replace_section("# Benchmarks\n", "Learning", "## Learning\n\nnew\n")

    assert replaced == doc.replace("## Learning\n\nold\n", "## Learning\n\nnew\n")
    assert appended == "# Benchmarks\n\n## Learning\n\nnew\n"
