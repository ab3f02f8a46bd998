"""The sandbox part of the overhead benchmark: a rollout-shaped pod runs under both runtimes,
and its subsection reports medians, differences and ratios side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._missing import needs_sandbox

from benchmarks.overhead import sandbox

REPO = Path(__file__).resolve().parents[2]


def _figures(seconds: dict, skipped: str = "") -> sandbox.SandboxFigures:
    return sandbox.SandboxFigures("cmd --sandbox", "today", "abc1234", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), seconds, skipped)


@needs_sandbox()
def test_each_main_runs_under_both_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "REPEATS", 1)
    monkeypatch.setattr(sandbox, "MAINS", {"pass": sandbox.MAINS["python -c pass (isolation alone)"]})

    seconds, skipped = sandbox.measure(REPO)

    assert skipped == ""
    assert set(seconds) == {"pass"} and set(seconds["pass"]) == {"process", "sandbox"}
    assert all(len(runs) == 1 and 0 < runs[0] < 60 for runs in seconds["pass"].values())


def test_the_subsection_reports_medians_differences_and_ratios() -> None:
    text = sandbox.subsection_markdown(_figures({"pass": {"process": (0.1, 0.2, 0.9), "sandbox": (0.3, 0.4, 0.5)}}))

    assert text.startswith(f"### {sandbox.SUBSECTION}\n")
    assert "Command: `cmd --sandbox`. Date: today. Commit: abc1234." in text
    assert "| pass | 0.20 s | 0.40 s | +0.20 s | 2.0x |" in text


def test_a_machine_without_sandboxes_says_so() -> None:
    text = sandbox.subsection_markdown(_figures({}, skipped="bwrap not found"))

    assert "**Not measured**: bwrap not found" in text
    assert sandbox.terminal_lines(_figures({}, skipped="bwrap not found")) == ["sandbox start-up not measured: bwrap not found"]
