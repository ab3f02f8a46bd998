"""The learning benchmark's reading and reporting, on a hand-made store (no pipeline run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_learning import IterationPoint, judge, read_curve, save_plot, section_markdown
from benchmarks.doc_sections import replace_section
from components.core.storage import RunLayout, open_store


def _write_iteration(store, iteration: int, rewards: dict[str, list[float]], unusable: int = 0) -> None:
    layout = RunLayout("learning")
    records = [
        {"rollout_id": f"{task}-s{i}", "task_id": task, "group_id": f"it{iteration}-{task}", "reward": r,
         "usable": True, "status": "ok"}
        for task, values in rewards.items() for i, r in enumerate(values)
    ]  # fmt: skip
    records += [
        {"rollout_id": f"broken-s{i}", "task_id": "broken", "group_id": f"it{iteration}-broken", "reward": 0.0,
         "usable": False, "status": "timeout"}
        for i in range(unusable)
    ]  # fmt: skip
    store.put_bytes(layout.rewards(iteration), json.dumps({"records": records, "metrics": {}}).encode())
    metrics = {"reward/mean": 0.0, "train/loss": 0.1 * iteration, "train/grad_norm": 1.0, "batch/rows": 8.0}
    store.put_bytes(layout.metrics(iteration), json.dumps(metrics).encode())


def _point(iteration: int, rewards: list[float]) -> IterationPoint:
    return IterationPoint(iteration, rewards, {"vowels": sum(rewards) / len(rewards)}, {}, 10.0)


def test_read_curve_takes_usable_rewards_per_task_and_train_metrics(tmp_path: Path) -> None:
    store = open_store(tmp_path.as_uri())
    _write_iteration(store, 0, {"vowels": [0.4, 0.2], "vowel-song": [0.3, 0.3]}, unusable=2)
    _write_iteration(store, 1, {"vowels": [0.8, 0.6], "vowel-song": [0.5, 0.7]})

    points = read_curve(store, "learning", {0: {"time/iteration_s": 12.0}, 1: {}})

    assert [p.iteration for p in points] == [0, 1]
    assert points[0].mean == pytest.approx(0.3)  # the unusable rollouts' zeros are left out
    assert points[0].by_task == pytest.approx({"vowel-song": 0.3, "vowels": 0.3})
    assert points[1].by_task == pytest.approx({"vowel-song": 0.6, "vowels": 0.7})
    assert points[1].train == {"train/loss": pytest.approx(0.1), "train/grad_norm": 1.0}
    assert (points[0].seconds, points[1].seconds) == (12.0, None)


def test_judge_passes_a_clear_rise_and_fails_a_flat_or_noisy_one() -> None:
    rising = [_point(k, [0.4 + 0.05 * k + d for d in (-0.02, 0.0, 0.02)]) for k in range(8)]
    flat = [_point(k, [0.4, 0.42, 0.38]) for k in range(8)]
    noisy = [_point(k, [0.1, 0.9] if k < 6 else [0.3, 1.0, 0.65]) for k in range(8)]

    assert judge(rising).clear and judge(rising).window == 2
    assert judge(rising).gain == pytest.approx(0.3)
    assert not judge(flat).clear
    assert judge(noisy).gain > 0.1 and not judge(noisy).clear  # a gain, but within the noise


def test_section_has_the_table_the_figure_and_the_verdict(tmp_path: Path) -> None:
    points = [_point(k, [0.4 + 0.1 * k, 0.42 + 0.1 * k]) for k in range(4)]
    figure = tmp_path / "figures" / "curve.png"
    save_plot(points, figure)
    doc_figure = Path(__file__).resolve().parents[2] / "docs" / "figures" / "learning-curve.png"

    text = section_markdown("cmd", "today", "2 cores", "setup", points, judge(points), 321.0, doc_figure)

    assert figure.read_bytes().startswith(b"\x89PNG")
    assert text.startswith("## Learning\n")
    assert "](figures/learning-curve.png)" in text
    assert "| 3 | 0.710 |" in text
    assert "**PASS** mean reward rises clearly" in text and "321 s" in text


def test_replacing_a_section_keeps_the_others() -> None:
    doc = "# Benchmarks\n\nintro\n\n## Recording proxy\n\nproxy figures\n\n## Learning\n\nold\n\n## Pipeline overhead\n\nx\n"

    replaced = replace_section(doc, "Learning", "## Learning\n\nnew\n")
    appended = replace_section("# Benchmarks\n", "Learning", "## Learning\n\nnew\n")

    assert replaced == doc.replace("## Learning\n\nold\n", "## Learning\n\nnew\n")
    assert appended == "# Benchmarks\n\n## Learning\n\nnew\n"
