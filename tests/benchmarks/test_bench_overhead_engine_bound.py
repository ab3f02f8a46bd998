"""The engine bound of the overhead benchmark: the machine's busy CPU read from /proc/stat,
the sampled counters read at the rollout phase's ends, and the bound on what any engine
could give (the phase over the CPU work outside the engine spread on every core). The run
itself is a real Claude Code evaluation pass; these check the arithmetic it is read with."""

from __future__ import annotations

import os

import pytest

from benchmarks.overhead import engine_bound
from benchmarks.overhead.engine_bound import EngineBound, Sample


def _figures(**fields: float) -> EngineBound:
    measured = dict(rollouts=16, pass_rate=0.5, phase_s=120.0, engine_busy_s=30.0, engine_cpu_s=40.0,
                    machine_cpu_s=200.0, cores=2)  # fmt: skip
    measured.update(fields)
    return EngineBound("cmd --engine-bound", "today", "abc1234", "2 cores", (1.0,) * 3, (2.0,) * 3, **measured)


def test_busy_cpu_leaves_out_idle_and_iowait() -> None:
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat = f"cpu  {3 * tick} 0 {tick} {50 * tick} {7 * tick} 0 {tick} 0 {2 * tick} 0\ncpu0 1 2 3 4\n"
    assert engine_bound.machine_busy_cpu_s(stat) == pytest.approx(5.0)  # guest is inside user already


def test_counters_are_read_between_samples_at_the_phase_ends() -> None:
    samples = [Sample(10.0, 100.0, 5.0, 1.0), Sample(12.0, 104.0, 7.0, 3.0)]
    assert engine_bound.interpolate(samples, 11.5, "machine_cpu_s") == pytest.approx(103.0)
    assert engine_bound.interpolate(samples, 9.0, "engine_cpu_s") == 5.0  # before the first: clamped
    assert engine_bound.interpolate(samples, 20.0, "engine_busy_s") == 3.0


def test_the_bound_is_the_phase_over_the_work_outside_the_engine_on_every_core() -> None:
    figures = _figures()
    assert figures.other_cpu_s == 160.0  # 200 s busy on the machine, 40 s of them the engine's
    assert figures.bound == pytest.approx(120.0 / 80.0)
    assert figures.per_minute == pytest.approx(8.0)
    assert _figures(machine_cpu_s=30.0).bound == float("inf")  # nothing outside the engine: no floor


def test_the_subsection_shows_the_phase_the_engine_share_and_the_bound() -> None:
    text = engine_bound.subsection_markdown(_figures())

    assert text.startswith(f"### {engine_bound.SUBSECTION}\n")
    assert "Command: `cmd --engine-bound`. Date: today. Commit: abc1234." in text
    assert "| 120 s | 8.0 | 30 s (25%) | 40 s | 160 s | 80 s (2 cores) | 1.50x |" in text
    assert "the machine's cores were 83% busy, the engine's share of that CPU 20%" in text
    assert engine_bound.terminal_lines(_figures())[-1] == "no engine could raise rollouts/min by more than 1.50x here"
