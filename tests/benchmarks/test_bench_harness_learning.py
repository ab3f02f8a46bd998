"""The harness learning benchmark's verdict over seeds, its section and the readings it stores,
on fixed numbers and a hand-made store (no harness, no pipeline run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_harness_learning as bench
from benchmarks.doc_sections import DOC, replace_section
from benchmarks.harness_learning.curve import step_seconds, verdicts
from benchmarks.harness_learning.report import judge, section_markdown, window
from benchmarks.overhead.probes import IterationEvents, TimedEvent
from benchmarks.seeds.results import Arm, SeedRun, stored_runs
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store
from tests.benchmarks._seed_runs import both_arms, passes_run

STEPS = {"prepare": 2.0, "serve start": 8.0, "rollouts": 100.0, "score": 1.0, "train": 20.0, "commit": 3.0, "other": 6.0}


def _run(arm: Arm, seed: int, passes: list[int]) -> SeedRun:
    return passes_run(arm, seed, passes, 1234.0, trained_tokens=lambda k: 900.0 + k, wall_s=140.0, steps=STEPS)


def _runs(real: list[list[int]], control: list[list[int]]) -> dict[Arm, dict[int, SeedRun]]:
    return both_arms(real, control, _run)


RISING, FLAT = [3, 4, 6, 8, 11, 12], [5, 6, 5, 6, 6, 5]


def test_three_rising_seeds_against_flat_controls_pass_and_each_part_can_fail() -> None:
    assert judge(_runs([RISING, [4, 4, 7, 9, 12, 12], [3, 5, 6, 8, 10, 13]], [FLAT] * 3)).ok
    assert not judge(_runs([RISING, RISING, FLAT], [FLAT] * 3)).ok  # a seed without a gain
    assert not judge(_runs([RISING] * 3, [RISING, [3, 4, 6, 8, 11, 13], [2, 4, 6, 8, 11, 12]])).ok  # the control rises
    assert not judge(_runs([RISING, RISING], [FLAT, FLAT])).complete


def test_a_short_run_compares_its_halves() -> None:
    assert (window(2), window(3), window(4), window(6)) == (1, 1, 2, 2)
    # 6 iterations: the last two (11+12 of 32) against the first two (3+4 of 32)
    assert judge(_runs([RISING], [FLAT])).real == pytest.approx((16 / 32,))


def test_the_section_shows_each_seeds_curves_the_step_times_and_the_verdict() -> None:
    text = section_markdown("codex", "setup sentence", "cmd", "bench-harness-learning", _runs([RISING] * 3, [FLAT] * 3))
    assert text.startswith("## Learning through real harnesses: codex\n")
    assert "Command: `cmd` (the `bench-harness-learning` make target)" in text and "setup sentence" in text
    assert "| 1 | 0.188 → 0.250 → 0.375 → 0.500 → 0.688 → 0.750 | +0.562 | 0.312 → 0.375 → 0.312 → 0.375 → 0.375 → 0.312 |" in text
    assert "| 5 | 6 | 140 | 2 | 8 | 100 | 1 | 20 | 3 | 6 | 905 |" in text
    assert "**PASS** the shuffled-reward control's is not" in text


def test_each_harness_section_is_its_stored_results_rendered() -> None:
    """Re-rendering a harness's stored results leaves docs/benchmarks.md as it is: a figure typed
    into the section, or results stored without their rendering, fails here."""
    doc = DOC.read_text()
    for harness in bench.EXAMPLES:
        if not any(stored_runs(bench.results_folder(harness)).values()):
            continue  # no seed stored yet: the section still holds the single-seed run of before (see the issue note)
        text, _ = bench.section(harness)
        assert replace_section(doc, f"Learning through real harnesses: {harness}", text) == doc


def _write_iteration(store, name: str, iteration: int, verdicts: dict[str, str | bool], shuffled: bool) -> None:
    """Outcomes with the given verdicts (True/False: ok and passed or not; else a status)."""
    layout = RunLayout(name)
    records = []
    for rollout_id, verdict in verdicts.items():
        status = RolloutStatus.OK if isinstance(verdict, bool) else RolloutStatus(verdict)
        passed = verdict if isinstance(verdict, bool) else None
        outcome = Outcome(rollout_id=rollout_id, task_id=rollout_id.split("-s")[0], sample_index=0, iteration=iteration,
                          status=status, reward=float(bool(passed)) if status is RolloutStatus.OK else None, passed=passed)  # fmt: skip
        store.put_bytes(layout.outcome(iteration, rollout_id), outcome.model_dump_json().encode())
        # Under the control the trainer's rewards say the opposite: the reading must not use them.
        reward = float(not passed) if shuffled else float(bool(passed))
        records.append({"rollout_id": rollout_id, "task_id": outcome.task_id, "group_id": f"it{iteration}",
                        "reward": reward, "usable": True, "status": status.value})  # fmt: skip
    store.put_bytes(layout.rewards(iteration), json.dumps({"records": records}).encode())
    metrics = {"reward/mean": 0.5, "batch/trained_tokens": 321.0}
    store.put_bytes(layout.metrics(iteration), json.dumps(metrics).encode())


def test_verdicts_are_the_verifiers_on_graded_rollouts_never_the_controls_rewards(tmp_path: Path) -> None:
    store = open_store(tmp_path.as_uri())
    _write_iteration(store, "codex", 0, {"a-s0": True, "a-s1": False, "b-s0": "timeout", "b-s1": "infra_error"}, True)

    # the timeout counts as a failure, the infra error not at all
    assert verdicts(store, RunLayout("codex"), 0) == [True, False, False]


def test_step_seconds_come_from_the_node_events() -> None:
    events = IterationEvents(started=100.0)
    for at, node, phase in [
        (100.0, "prepare", "running"), (102.0, "prepare", "succeeded"),
        (102.5, "generate.serve", "running"), (110.0, "generate.serve", "daemoned"),
        (110.5, "generate.rollout(0)", "running"), (111.0, "generate.rollout(1)", "running"),
        (150.0, "generate.rollout(0)", "succeeded"), (170.0, "generate.rollout(1)", "succeeded"),
        (171.0, "score", "running"), (172.0, "score", "succeeded"),
        (172.5, "train", "running"), (190.0, "train", "succeeded"),
        (190.0, "commit", "running"), (193.0, "commit", "succeeded"),
    ]:  # fmt: skip
        events.events.append(TimedEvent(at, "", node, phase))

    steps = step_seconds(events, wall_s=100.0)

    assert steps == pytest.approx({"prepare": 2.0, "serve start": 7.5, "rollouts": 59.5, "score": 1.0,
                                   "train": 17.5, "commit": 3.0, "other": 9.5})  # fmt: skip
