"""The free-sampling benchmark's stored results, bars and doc section, on fixed numbers
(no harness, no pipeline run): resuming reads what was stored, the section comes from the
stored files alone, and each bar can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.free_learning import report
from benchmarks.free_learning.results import PassRates, RunCurve, load_seed, save_stage, stored_seeds
from benchmarks.free_learning.seed_run import STAGES, SftStage
from benchmarks.verdict import seed_bound


def _rates(passes: int, graded: int = 20) -> PassRates:
    return PassRates(passed=[True] * passes + [False] * (graded - passes), wall_s=60.0)


def _curve(*passes: int) -> RunCurve:
    n = len(passes)
    return RunCurve(iterations=[_rates(p) for p in passes], trained_tokens=[900.0] * n, forced_tokens=[0.0] * n, wall_s=600.0)


def _store_seed(folder: Path, seed: int, grpo: tuple[int, ...], control: tuple[int, ...], stop_after: str | None = None) -> None:
    result = load_seed(seed, "abc1234", "2026-12-06 01:00 UTC", "2 CPU cores", folder)
    values = {
        "record": _rates(16), "untrained_train": _rates(0), "untrained_held_out": _rates(0, 10),
        "sft": SftStage(sessions=60, target_tokens=5000, chosen_epoch=12, epochs=30, val_loss=0.4, left_out={}, wall_s=90.0),
        "sft_held_out": _rates(2), "grpo": _curve(*grpo), "grpo_held_out": _rates(5),
        "control": _curve(*control), "distill": _curve(3, 5, 6),
    }  # fmt: skip
    for stage in STAGES:
        save_stage(result, stage, values[stage], folder)
        if stage == stop_after:
            return


def test_a_stored_stage_is_read_back_and_resuming_skips_it(tmp_path: Path) -> None:
    _store_seed(tmp_path, 0, (3, 6, 9), (3, 3, 4), stop_after="sft")
    resumed = load_seed(0, "other", "later", "elsewhere", tmp_path)

    assert [s for s in STAGES if resumed.has(s)] == ["record", "untrained_train", "untrained_held_out", "sft"]
    assert (resumed.commit, resumed.machine) == ("abc1234", "2 CPU cores")  # the stamp of the seed's start
    assert resumed.pass_rates("record").rate == pytest.approx(0.8)
    assert not list(tmp_path.glob("*.tmp"))


def test_three_seeds_that_rise_pass_and_the_section_says_so(tmp_path: Path) -> None:
    for seed, grpo in enumerate([(3, 7, 9), (2, 6, 8), (4, 8, 11)]):
        _store_seed(tmp_path, seed, grpo, (3, 4, 3))
    results = stored_seeds(tmp_path)
    verdict = report.verdict(results)
    section = report.section_markdown(results)

    assert verdict.ok and verdict.rises == pytest.approx((0.3, 0.3, 0.35))
    assert "0.150 → 0.350 → 0.450" in section  # seed 0's GRPO curve, from the stored verdicts
    assert "| held-out rise (GRPO's last vs SFT) | +0.150 |" in section
    assert "**FAIL**" not in section and "commit abc1234" in section


@pytest.mark.parametrize(
    ("grpo", "control", "failing"),
    [
        ([(3, 7, 9), (2, 6, 8), (4, 5, 6)], [(3, 4, 3)] * 3, "raises it by at least 0.15 in every seed"),  # seed 2: +0.10
        ([(17, 19, 20), (2, 6, 8), (4, 8, 11)], [(3, 4, 3)] * 3, "training pass rate is at most 0.8"),
        ([(3, 7, 9), (2, 6, 8), (4, 8, 11)], [(2, 6, 8), (3, 7, 9), (4, 8, 11)], "the shuffled-reward control fails"),
    ],
)
def test_each_bar_can_fail(tmp_path: Path, grpo, control, failing: str) -> None:
    for seed, (real, shuffled) in enumerate(zip(grpo, control, strict=True)):
        _store_seed(tmp_path, seed, real, shuffled)
    verdict = report.verdict(stored_seeds(tmp_path))

    assert not verdict.ok
    assert any(line.startswith("**FAIL**") and failing in line for line in verdict.lines())


def test_fewer_seeds_than_three_are_incomplete_never_a_pass(tmp_path: Path) -> None:
    _store_seed(tmp_path, 0, (3, 7, 9), (3, 4, 3))
    _store_seed(tmp_path, 1, (2, 6, 8), (3, 4, 3), stop_after="grpo")
    verdict = report.verdict(stored_seeds(tmp_path))

    assert verdict.seeds == 1 and not verdict.ok
    assert verdict.lines()[0].startswith("**INCOMPLETE**: 1 of 3 seeds stored")


def test_the_seed_bound_is_the_one_sided_t_bound() -> None:
    bound = seed_bound([0.2, 0.3, 0.25])
    assert bound.t == pytest.approx(2.92, abs=0.005)  # 2 degrees of freedom
    assert bound.lower == pytest.approx(0.25 - 2.92 * 0.05 / 3**0.5, abs=1e-3)
    assert not seed_bound([0.3, -0.2, 0.1]).holds
    with pytest.raises(ValueError, match="at least 2 seeds"):
        seed_bound([0.3])


def test_claude_code_runs_the_same_config_as_shipped_and_its_section_reports_the_bars(tmp_path: Path) -> None:
    from benchmarks.free_learning.seed_run import seed_config

    config = seed_config(1, tmp_path / "root", harness="claude-code")
    mini = seed_config(1, tmp_path / "root")
    assert (config.harness.name, config.harness.settings) == ("claude-code", {})
    assert mini.harness.settings and config.algorithm == mini.algorithm and config.tasks == mini.tasks
    assert (config.seed, config.model.tiny_seed) == (1, 1)

    _store_seed(tmp_path, 0, (3, 7, 9), (3, 4, 3))
    section = report.section_markdown(stored_seeds(tmp_path), "claude-code")
    assert section.startswith("## Learning by free sampling: claude-code")
    assert "--harness claude-code" in section and "free-learning/claude-code/seed-*.json" in section
    assert "here they are reported, not required" in section and "instance_template" not in section


def test_a_seed_resumed_at_another_commit_names_the_stages_run_there(tmp_path: Path, monkeypatch) -> None:
    from rich.console import Console

    from benchmarks.free_learning import seed_run

    _store_seed(tmp_path, 0, (3, 6, 9), (3, 3, 4), stop_after="sft")
    commits = iter(["abc1234", *["def5678"] * 8])  # sft_held_out at the seed's first commit, the rest later
    monkeypatch.setattr(seed_run, "commit_text", lambda: next(commits))
    monkeypatch.setattr(seed_run, "results_folder", lambda harness: tmp_path)
    monkeypatch.setattr(seed_run, "_evaluate", lambda *args, **kwargs: _rates(4))
    monkeypatch.setattr(seed_run, "_rl", lambda *args: _curve(3, 6))
    monkeypatch.setattr(seed_run, "_rl_from_grpo", lambda *args: _curve(3, 6))
    monkeypatch.setattr(seed_run, "_teacher", lambda *args: {"teacher_model": "grpo-last", "verifier_reward": False})

    result = seed_run.run_seed(load_seed(0, "unused", "later", "elsewhere", tmp_path), tmp_path / "store", lambda _: None, Console())

    assert result.stage_commits == {s: "def5678" for s in ("grpo", "grpo_held_out", "control", "distill")}
    assert load_seed(0, "x", "y", "z", tmp_path).stage_commits == result.stage_commits
    assert "commit abc1234 (grpo at def5678, grpo_held_out at def5678, control at def5678, distill at def5678)" in (
        report.section_markdown([result])
    )


def test_the_control_is_given_grpos_first_rollouts_but_not_their_costs(tmp_path: Path) -> None:
    from components.core.storage import RunLayout, open_store

    from benchmarks.free_learning.seed_run import share_first_rollouts

    store, grpo, control = open_store(f"file://{tmp_path}"), RunLayout("cold-start"), RunLayout("cold-start-control")
    store.put_bytes(grpo.outcome(0, "t-s0"), b'{"passed": true}')
    store.put_bytes(grpo.trajectory(0, "t-s0"), b"{}\n")
    store.put_bytes(f"{grpo.images(0)}/ab.png", b"png")
    store.put_bytes(f"{grpo.costs(0)}/rollout-t-s0.json", b"{}")
    store.put_bytes(grpo.outcome(1, "t-s0"), b'{"passed": false}')  # a later iteration is GRPO's own

    assert share_first_rollouts(store, grpo, control) == 1
    assert store.get_bytes(control.outcome(0, "t-s0")) == b'{"passed": true}'
    assert store.get_bytes(control.trajectory(0, "t-s0")) == b"{}\n"
    assert store.get_bytes(f"{control.images(0)}/ab.png") == b"png"
    assert not store.list(control.costs(0)) and not store.list(control.outcomes(1))
    # A run that has outcomes of its own (resumed) is left as it is.
    store.put_bytes(grpo.outcome(0, "t-s1"), b"{}")
    assert share_first_rollouts(store, grpo, control) == 0 and not store.exists(control.outcome(0, "t-s1"))
