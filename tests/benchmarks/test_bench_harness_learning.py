"""The harness learning benchmark's verdicts, report and reading, on fixed numbers and a
hand-made store (no harness, no pipeline run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.harness_learning.curve import HarnessIteration, read_run, step_seconds
from benchmarks.harness_learning.report import HarnessRuns, HarnessVerdict, judge, section_markdown
from benchmarks.overhead.probes import IterationEvents, TimedEvent
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store


def _point(iteration: int, passes: int, rollouts: int = 16) -> HarnessIteration:
    passed = [True] * passes + [False] * (rollouts - passes)
    steps = {"prepare": 2.0, "serve start": 8.0, "rollouts": 100.0, "score": 1.0, "train": 20.0, "commit": 3.0, "other": 6.0}
    return HarnessIteration(iteration, passed, passes / rollouts, 900.0 + iteration, 140.0, steps)


def _run(passes: list[int]) -> list[HarnessIteration]:
    return [_point(k, n) for k, n in enumerate(passes)]


def test_a_clear_rise_passes_and_a_flat_or_noisy_one_fails() -> None:
    rising = judge(_run([3, 4, 6, 8, 11, 12]))  # 7/32 -> 23/32
    flat = judge(_run([6, 7, 6, 6, 7, 6]))
    small = judge(_run([4, 5, 6, 6, 7, 8]))  # +0.19 over 32 rollouts each: about 1.6 standard errors
    noisy = judge([_point(k, n, rollouts=4) for k, n in enumerate([1, 2, 1, 3, 3, 3])])  # +0.375 over 8 rollouts each: about 1.5 standard errors

    assert rising.clear and rising.window == 2
    assert rising.gain == pytest.approx(16 / 32) and rising.quantity == "pass rate"
    assert not flat.clear
    assert small.gain >= 0.15 and not small.clear
    assert noisy.gain >= 0.15 and not noisy.clear


def test_a_short_run_compares_its_halves() -> None:
    assert judge(_run([2, 10])).window == 1
    assert judge(_run([2, 3, 10])).window == 1
    assert judge(_run([2, 3, 9, 10])).window == 2


def test_a_control_that_rises_clearly_is_flagged() -> None:
    real, flat_control, rising_control = _run([3, 4, 6, 8, 11, 12]), _run([5, 6, 5, 6, 6, 5]), _run([2, 3, 8, 9, 12, 13])

    fine = HarnessVerdict("codex", judge(real), judge(flat_control))
    leaky = HarnessVerdict("codex", judge(real), judge(rising_control))
    stuck = HarnessVerdict("codex", judge(flat_control), judge(flat_control))

    assert fine.ok and not leaky.ok and not stuck.ok
    assert "**PASS** the shuffled-reward control does not rise clearly" in fine.lines()[1]
    assert "**FAIL** the shuffled-reward control rises clearly" in leaky.lines()[1]
    assert leaky.lines()[0].startswith("codex: **PASS** pass rate rises clearly")


def test_section_has_both_runs_per_harness_and_the_verdicts() -> None:
    runs = HarnessRuns("codex", "setup sentence", _run([3, 4, 6, 8, 11, 12]), _run([5, 6, 5, 6, 6, 5]), (1234.0, 1300.0))

    text = section_markdown("cmd --harness codex", "bench-harness-learning", "abc1234", "today", "2 cores", runs)

    assert text.startswith("## Learning through real harnesses: codex\n")
    assert "Command: `cmd --harness codex` (the `bench-harness-learning` make target), at commit abc1234." in text
    assert "setup sentence" in text
    assert "Real run (1234 s in all)" in text and "Shuffled-reward control (1300 s in all)" in text
    assert "| iteration | pass rate | ± s.e. | graded | reward mean | trained tokens | wall s | prepare s |" in text
    assert "| 5 | 0.750 | 0.112 | 16 | 0.750 | 905 | 140 | 2 | 8 | 100 | 1 | 20 | 3 | 6 |" in text
    assert "- codex: **PASS** pass rate rises clearly" in text


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


def test_read_run_takes_verifier_verdicts_of_graded_rollouts(tmp_path: Path) -> None:
    store = open_store(tmp_path.as_uri())
    _write_iteration(store, "codex", 0, {"a-s0": True, "a-s1": False, "b-s0": "timeout", "b-s1": "infra_error"}, True)
    _write_iteration(store, "codex", 1, {"a-s0": True, "a-s1": True, "b-s0": True, "b-s1": False}, True)

    points = read_run(store, "codex", {0: {"time/iteration_s": 50.0}, 1: {}}, {})

    assert points[0].passed == [True, False, False]  # the timeout counts as a failure, the infra error not at all
    assert points[1].pass_rate == 0.75
    assert points[0].stderr == pytest.approx(math.sqrt(1 / 3) / math.sqrt(3))
    assert (points[0].reward_mean, points[0].trained_tokens, points[0].wall_s) == (0.5, 321.0, 50.0)
    assert points[0].step_s == {} and points[1].wall_s is None


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
