"""The engine sweep of the overhead benchmark: its subsection sets both engines side by side
at each concurrency (rollouts per minute over the rollout phase, and the ratio), and says
when vLLM did not run. The runs themselves are one-iteration pipeline runs."""

from __future__ import annotations

from benchmarks.overhead import engine_sweep
from benchmarks.overhead.engine_sweep import EngineSweep, SweepRun


def _sweep(with_vllm: bool = True) -> EngineSweep:
    runs = [SweepRun("dev", c, 6 * c, rollout_phase_s=30.0, iteration_s=40.0) for c in engine_sweep.SWEEP]
    if with_vllm:
        runs += [SweepRun("vllm", c, 6 * c, rollout_phase_s=20.0, iteration_s=60.0) for c in engine_sweep.SWEEP]
    skipped = None if with_vllm else "vLLM's CPU build is not installed in .venv-vllm: run `make vllm`"
    return EngineSweep("cmd --engine-sweep", "today", "abc1234", "2 cores", (1.0,) * 3, (2.0,) * 3, tuple(runs), skipped)


def test_rollouts_per_minute_are_over_the_rollout_phase() -> None:
    assert SweepRun("dev", 8, 32, rollout_phase_s=48.0, iteration_s=90.0).per_minute == 40.0


def test_the_subsection_sets_both_engines_side_by_side_with_the_ratio() -> None:
    text = engine_sweep.subsection_markdown(_sweep())

    assert text.startswith(f"### {engine_sweep.SUBSECTION}\n")
    assert "Command: `cmd --engine-sweep`. Date: today. Commit: abc1234." in text
    assert "| 8 | 48 | 96.0 (30 s) | 144.0 (20 s) | 1.50x |" in text
    assert text.count("| 1.50x |") == len(engine_sweep.SWEEP)
    assert "did not run" not in text


def test_without_vllm_the_dev_engine_is_shown_and_the_reason_given() -> None:
    text = engine_sweep.subsection_markdown(_sweep(with_vllm=False))

    assert "| 1 | 6 | 12.0 (30 s) | - | - |" in text
    assert "vLLM did not run: vLLM's CPU build is not installed" in text
    assert engine_sweep.terminal_lines(_sweep(with_vllm=False))[-1].startswith("vLLM skipped: ")
