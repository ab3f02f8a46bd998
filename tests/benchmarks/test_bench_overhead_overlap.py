"""The overlap part of the overhead benchmark: its subsection sets the two runs side by side
(wall time, iterations, pass rate, policy lag) and reports the ratio. The runs themselves are
the quickstart (tests/e2e/test_overlapped_kill.py runs an overlapped one)."""

from __future__ import annotations

from benchmarks.overhead import overlap


def _figures() -> overlap.OverlapFigures:
    runs = (
        overlap.OverlapRun(0, 200.0, (50.0, 50.0, 50.0, 50.0), (0.5, 0.75, 0.9, 1.0), (0.0, 0.0, 0.0, 0.0)),
        overlap.OverlapRun(1, 160.0, (60.0, 35.0, 35.0, 30.0), (0.5, 0.5, 0.8, 0.95), (0.0, 1.0, 1.0, 1.0)),
    )
    return overlap.OverlapFigures("cmd --overlap", "today", "abc1234", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), runs)


def test_the_subsection_sets_both_runs_side_by_side_with_the_ratio() -> None:
    text = overlap.subsection_markdown(_figures())

    assert text.startswith(f"### {overlap.SUBSECTION}\n")
    assert "Command: `cmd --overlap`. Date: today. Commit: abc1234." in text
    assert "| 0 | 200.0 | 50 / 50 / 50 / 50 | 0.50 / 0.75 / 0.90 / 1.00 | 0 / 0 / 0 / 0 |" in text
    assert "| 1 | 160.0 | 60 / 35 / 35 / 30 | 0.50 / 0.50 / 0.80 / 0.95 | 0 / 1 / 1 / 1 |" in text
    assert "In order / overlapped wall time: **1.25x**" in text


def test_the_terminal_says_each_wall_time_and_the_ratio() -> None:
    assert overlap.terminal_lines(_figures()) == [
        "max_staleness 0: 200.0 s",
        "max_staleness 1: 160.0 s",
        "in order / overlapped: 1.25x",
    ]
