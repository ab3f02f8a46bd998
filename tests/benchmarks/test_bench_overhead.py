"""The overhead benchmark's time split, probes and report, on hand-made timelines (no pipeline run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pipelines.run
from benchmarks.doc_sections import DOC, write_section_keeping_subsections
from benchmarks.overhead import report
from benchmarks.overhead.breakdown import ENGINE_START, EXECUTOR, ROLLOUTS, split_iteration
from benchmarks.overhead.intervals import clip, intersect, subtract, total, union
from benchmarks.overhead.probes import EventLog, IterationEvents, ProcessWatch, TimedEvent


def test_interval_sets_merge_cut_and_clip() -> None:
    spans = [(5.0, 7.0), (0.0, 2.0), (1.0, 3.0), (4.0, 4.0)]

    assert union(spans) == [(0.0, 3.0), (5.0, 7.0)]
    assert total(spans) == 5.0
    assert intersect(spans, [(2.0, 6.0)]) == [(2.0, 3.0), (5.0, 6.0)]
    assert subtract([(0.0, 10.0)], spans) == [(3.0, 5.0), (7.0, 10.0)]
    assert clip([(0.0, 2.0), (1.0, 3.0), (9.0, 12.0)], 1.5, 10.0) == [(1.5, 2.0), (1.5, 3.0), (9.0, 10.0)]


def _events(started: float, timeline: list[tuple[float, str, str]]) -> IterationEvents:
    return IterationEvents(started, [TimedEvent(started + at, node.split("(")[0], node, phase) for at, node, phase in timeline])


# An iteration of 100 s: prepare 0-4, serve 4 (ready at 10) to 95, two rollout pods 10-40
# and 12-45, score 46-50, train 50-70, commit 70-80, the engine stopped by 95.
_TIMELINE = [
    (0, "prepare", "running"), (4, "prepare", "succeeded"),
    (4, "serve", "running"), (10, "serve", "daemoned"),
    (10, "rollout", "running"), (10, "rollout(0)", "running"), (12, "rollout(1)", "running"),
    (40, "rollout(0)", "succeeded"), (45, "rollout(1)", "succeeded"), (45, "rollout", "succeeded"),
    (46, "score", "running"), (50, "score", "succeeded"),
    (50, "train", "running"), (70, "train", "succeeded"),
    (70, "commit", "running"), (80, "commit", "succeeded"),
    (95, "serve", "succeeded"),
]  # fmt: skip


def test_split_puts_each_moment_in_one_bucket_and_charges_overhead_to_its_phase() -> None:
    started = 1000.0
    calls = [(1015.0, 1025.0), (1020.0, 1030.0), (1500.0, 1501.0)]  # the last one belongs to another iteration
    processes = {"harness": [(1012.0, 1035.0), (1014.0, 1042.0)], "verifier": [(1042.0, 1043.0)]}

    split = split_iteration(3, _events(started, _TIMELINE), 100.0, calls, processes, update_s=5.0)

    assert split.engine_calls_s == 15.0  # 15-30, overlapping calls counted once
    assert split.harness_s == 16.0  # 12-15 and 30-43 (harness or verifier, no call in flight)
    assert split.model_s == 20.0 and split.overhead_s == 64.0
    assert split.overhead_by_phase == {
        "prepare": 4.0, ENGINE_START: 6.0, ROLLOUTS: 2.0 + 2.0, "score": 4.0, "train": 15.0, "commit": 10.0,
        EXECUTOR: 1.0 + 20.0,  # 45-46 between nodes, 80-100 stopping the engine and finishing
    }  # fmt: skip
    assert sum(split.overhead_by_phase.values()) == pytest.approx(split.overhead_s)
    assert (split.rollouts, split.rollout_phase_s) == (2, 35.0)
    assert split.rollouts_per_minute == pytest.approx(60 * 2 / 35)
    assert sorted(split.pod_s) == [30.0, 33.0]
    assert (split.calls, split.call_latency_s) == (2, 20.0)


def test_process_watch_records_the_lifetime_of_a_harness_it_started() -> None:
    with ProcessWatch(interval_s=0.02) as watch:
        # The marker in the command line makes it a "harness"; this process is its parent.
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3)", "reference_harness.py"], check=True)
    assert len(watch.lifetimes["harness"]) == 1
    (start, end), = watch.lifetimes["harness"]
    assert end > start
    assert watch.lifetimes["verifier"] == []


def test_event_log_hooks_run_experiment_view_only_while_attached() -> None:
    original = pipelines.run.RunView
    log = EventLog()
    with log.attached():
        assert issubclass(pipelines.run.RunView, original) and pipelines.run.RunView is not original
    assert pipelines.run.RunView is original


def _split(iteration: int, overhead_s: float) -> object:
    events = _events(0.0, _TIMELINE)
    # Calls fill the iteration except for `overhead_s` seconds at its start.
    return split_iteration(iteration, events, 100.0, [(overhead_s, 100.0)], {}, update_s=0.0)


def _split_with(iteration: int, startup_s: float, executor_s: float) -> object:
    """An iteration of 100 s whose model calls fill everything but ``startup_s`` at its start
    (prepare, then engine start) and ``executor_s`` after the commit (the executor's own time)."""
    calls = [(startup_s, 80.0), (80.0 + executor_s, 100.0)]
    return split_iteration(iteration, _events(0.0, _TIMELINE), 100.0, calls, {}, update_s=0.0)


def test_report_judges_orchestration_alone_and_shows_all_overhead_beside_it() -> None:
    over = [_split_with(0, 4.0, 2.0), _split_with(1, 10.0, 10.0)]
    under = [_split_with(0, 30.0, 6.0), _split_with(1, 30.0, 3.0)]  # 4.5% together
    sweep = [report.SweepPoint(8, 8, over[0])]
    startup = {"bare interpreter": ([], 0.05), "train": (["torch"], 4.2)}
    info = report.RunInfo("cmd", "today", "abc1234", "sandbox", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), 250.0, 0.12)

    text = report.section_markdown(info, over, sweep, startup, "quickstart as shipped", "sweep")

    assert text.startswith("## Pipeline overhead\n")
    assert "**FAIL** orchestration" in text and "6.0% over the quickstart's iterations (2.0%, 10.0% each)" in text
    assert "all overhead (orchestration, storage, tracking, process start-up) is 13% (6.0%, 20.0% each)" in text
    assert "its largest parts: executor 46%, prepare 31%, engine start 23%" in text
    assert "| train | `torch` | 4.20 |" in text
    assert "`openforge --help`, from the request to the process's exit: 0.120 s" in text
    assert "Commit: abc1234. Rollout pods on the `sandbox` runtime." in text
    assert report.target_met(under) and not report.target_met(over)


def test_nodes_of_a_nested_dag_count_as_the_same_phases() -> None:
    nested = [(at, f"generate.{node}" if node.startswith(("serve", "rollout")) else node, phase)
              for at, node, phase in _TIMELINE]  # fmt: skip
    calls = [(1015.0, 1025.0)]
    processes = {"harness": [(1012.0, 1035.0)]}

    flat = split_iteration(0, _events(1000.0, _TIMELINE), 100.0, calls, processes, update_s=5.0)
    prefixed = split_iteration(0, _events(1000.0, nested), 100.0, calls, processes, update_s=5.0)

    assert prefixed.overhead_by_phase == flat.overhead_by_phase
    assert (prefixed.rollouts, prefixed.rollout_phase_s) == (flat.rollouts, flat.rollout_phase_s) == (2, 35.0)


def test_rewriting_the_section_keeps_the_subsections_other_parts_wrote(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# B\n\n## A\n\nold head\n\n### One\n\nold one\n\n### Two\n\nold two\n\n## C\n\nc\n")
    write_section_keeping_subsections("A", "## A\n\nnew head\n\n### One\n\nnew one\n", doc)
    assert doc.read_text() == "# B\n\n## A\n\nnew head\n\n### One\n\nnew one\n\n### Two\n\nold two\n\n## C\n\nc\n"


def test_the_breakdown_is_stored_and_read_back_whole(tmp_path: Path) -> None:
    split = _split_with(0, 4.0, 2.0)
    info = report.RunInfo("cmd", "today", "abc1234", "sandbox", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), 250.0, 0.12)
    breakdown = report.Breakdown(info, [split], [report.SweepPoint(8, 8, split)], {"train": (["torch"], 4.2)}, "q", "s")
    report.save_breakdown(breakdown, tmp_path / "b.json")
    assert report.load_breakdown(tmp_path / "b.json") == breakdown


def test_the_doc_section_is_the_stored_breakdown_rendered(tmp_path: Path) -> None:
    """Rendering benchmarks/results/overhead-breakdown.json into the page leaves it as it is: a
    figure typed into the section's own part, or a result stored without its rendering, fails here."""
    copy = tmp_path / "benchmarks.md"
    copy.write_text(DOC.read_text())
    write_section_keeping_subsections(report.SECTION, report.load_breakdown().markdown(), copy)
    assert copy.read_text() == DOC.read_text()
