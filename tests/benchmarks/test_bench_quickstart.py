"""bench-quickstart and the seeded results it stores: reading a run back, resuming, the bars,
and the doc section and README quote rendered from the stored results alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_quickstart as bench
from benchmarks.doc_sections import DOC, replace_marked, replace_section
from benchmarks.seeds import runs as seed_runs
from benchmarks.seeds.results import Arm, SeedRun, read_iterations, save_run, stored_runs
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store
from tests.benchmarks._seed_runs import both_arms, passes_run


def _run(arm: Arm, seed: int, passes: list[int]) -> SeedRun:
    return passes_run(arm, seed, passes, 200.0, trained_tokens=100.0, wall_s=60.0)


def _runs(real: list[list[int]], control: list[list[int]]) -> dict[Arm, dict[int, SeedRun]]:
    return both_arms(real, control, _run)


def test_reading_a_run_keeps_graded_rollouts_with_the_verifiers_reward_not_the_controls(tmp_path: Path) -> None:
    store, layout = open_store(tmp_path.as_uri()), RunLayout("quickstart")
    verdicts = {"a-s0": True, "a-s1": False, "b-s0": "timeout", "b-s1": "infra_error"}
    records = []
    for rollout_id, verdict in verdicts.items():
        status = RolloutStatus.OK if isinstance(verdict, bool) else RolloutStatus(verdict)
        passed = verdict if isinstance(verdict, bool) else None
        outcome = Outcome(rollout_id=rollout_id, task_id=rollout_id[0], sample_index=0, iteration=0, status=status,
                          reward=float(bool(passed)) if status is RolloutStatus.OK else None, passed=passed)  # fmt: skip
        store.put_bytes(layout.outcome(0, rollout_id), outcome.model_dump_json().encode())
        # The control's records carry permuted rewards; verifier_rewards the true ones.
        records.append({"rollout_id": rollout_id, "task_id": rollout_id[0], "reward": float(not passed),
                        "usable": True, "status": status.value})  # fmt: skip
    truth = {"a-s0": 1.0, "a-s1": 0.0, "b-s0": 0.0}
    store.put_bytes(layout.rewards(0), json.dumps({"records": records, "verifier_rewards": truth}).encode())
    store.put_bytes(layout.metrics(0), json.dumps({"batch/trained_tokens": 42.0}).encode())

    [point] = read_iterations(store, "quickstart", {0: {"time/iteration_s": 12.5}})

    # timeout is graded (the agent's own failure), infra_error is not
    assert [(r.task_id, r.reward, r.passed) for r in point.rollouts] == [("a", 1.0, True), ("a", 0.0, False), ("b", 0.0, False)]
    assert point.pass_rate == pytest.approx(1 / 3) and point.trained_tokens == 42.0 and point.wall_s == 12.5


def test_stored_runs_read_back_and_resuming_runs_only_what_is_missing(tmp_path: Path, monkeypatch) -> None:
    for arm in Arm:
        save_run(tmp_path, _run(arm, 0, [8, 12]))
    save_run(tmp_path, _run(Arm.REAL, 1, [8, 9]))
    runs = stored_runs(tmp_path)
    assert sorted(runs[Arm.REAL]) == [0, 1] and sorted(runs[Arm.CONTROL]) == [0]
    assert runs[Arm.REAL][0] == _run(Arm.REAL, 0, [8, 12])

    started = []
    monkeypatch.setattr(seed_runs, "run_fresh", lambda config, root: started.append((config.seed, root.name)) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        seed_runs.run_missing(bench.CONFIG, tmp_path, tmp_path / "work", [0, 1], print)
    # seed 0 is whole and seed 1's real arm is stored: only seed 1's control runs, with shuffled rewards
    assert started == [(1, "control-seed-1")]
    assert seed_runs.seed_overrides(Arm.CONTROL, 1) == {"seed": 1, "model.tiny_seed": 1, "algorithm.shuffle_rewards": True}


def test_a_file_named_for_another_run_is_refused(tmp_path: Path) -> None:
    save_run(tmp_path, _run(Arm.REAL, 3, [8, 12]))
    (tmp_path / "real-seed-3.json").rename(tmp_path / "real-seed-4.json")
    with pytest.raises(ValueError, match="real-seed-4.json holds arm real seed 3"):
        stored_runs(tmp_path)


RISING = [8, 10, 14]  # 0.5 -> 0.875: +0.375
FLAT = [8, 9, 8]


@pytest.mark.parametrize(
    ("real", "control", "mark"),
    [
        ([RISING] * 18 + [FLAT] * 2, [FLAT] * 10 + [RISING] * 10, "PASS"),
        ([RISING] * 17 + [FLAT] * 3, [FLAT] * 20, "FAIL"),  # 17 of 20 rise
        ([[8, 9, 10]] * 20, [FLAT] * 20, "FAIL"),  # every run rises, by 0.125 only
        ([RISING] * 20, [FLAT] * 9 + [RISING] * 11, "FAIL"),  # 11 controls rise
        ([RISING] * 20, [RISING] * 10 + [FLAT] * 9, "INCOMPLETE"),  # a control still to run
    ],
)
def test_each_bar_can_fail_and_missing_seeds_never_pass(real, control, mark: str) -> None:
    runs = _runs(real, control)
    judged = bench.verdict(runs)
    assert judged.mark() == mark
    section = bench.section_markdown(runs)
    assert f"- **{mark}**" in section and section.startswith(f"## {bench.SECTION}\n")
    assert f"in {judged.real_rising} of {len(real)} runs" in bench.readme_text(runs)


def test_the_section_shows_every_seeds_curve_for_both_arms() -> None:
    section = bench.section_markdown(_runs([RISING, FLAT], [FLAT]), seeds=2)
    assert "| 0 | 0.500 → 0.625 → 0.875 | +0.375 | 0.500 → 0.562 → 0.500 | +0.000 | 400 |" in section
    assert "| 1 | 0.500 → 0.562 → 0.500 | +0.000 | not run | - | 200 |" in section
    assert "(1 seed(s) still to run)" in section


def test_the_doc_section_and_the_readme_quote_are_the_stored_results_rendered() -> None:
    """Re-rendering the stored results leaves docs/benchmarks.md and the README as they are: a
    figure typed into either, or results stored without their rendering, fails here."""
    runs = stored_runs(bench.RESULTS)
    doc = DOC.read_text()
    assert replace_section(doc, bench.SECTION, bench.section_markdown(runs)) == doc
    readme = bench.README.read_text()
    assert replace_marked(readme, bench.MARKED, bench.readme_text(runs)) == readme
