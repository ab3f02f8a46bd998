"""The user's view: rollout counts from node events, and the summary table."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from pipelines.executor import NodeEvent, NodePhase
from pipelines.run_view import RunView, rise_line, summary_table


def _render(view_or_table, console: Console, out: io.StringIO) -> str:
    console.print(view_or_table)
    return out.getvalue()


def _outcome(tmp_path: Path, name: str, status: str) -> dict[str, Path]:
    path = tmp_path / name / "outcome.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"status": status}))
    return {"outcome": path}


def test_rollouts_count_recorded_agent_failures_as_failed(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=160)
    view = RunView(console)
    view.start_iteration(0)
    events = [
        NodeEvent("prepare", "prepare", NodePhase.SUCCEEDED),
        NodeEvent("rollout", "rollout", NodePhase.RUNNING, fan_out=4),
        *(NodeEvent("rollout", f"rollout({i})", NodePhase.RUNNING) for i in range(3)),
        NodeEvent("rollout", "rollout(0)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "a", "ok")),
        NodeEvent("rollout", "rollout(1)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "b", "harness_error")),
        NodeEvent("rollout", "rollout(3)", NodePhase.SKIPPED, "outputs already in the store"),
        NodeEvent("rollout", "rollout(2)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "c", "cut")),
    ]
    for event in events:
        view.observe(event)
    text = _render(view.progress, console, out)
    assert "ok 1 · failed 1 · running 0 · cut 1 · resumed 1" in text, "a cut rollout is not the agent's failure"
    assert "4/4" in text
    assert "it 0 · rollout(2): cut (straggler)" in out.getvalue()


def test_summary_table_shows_each_iteration_with_failed_rollouts_summed() -> None:
    logged = {
        0: {"reward/mean": 0.25, "pass_at_1": 0.5, "pass_at_k": 0.75, "rollouts/ok": 6, "rollouts/timeout": 1,
            "rollouts/harness_error": 1, "rollouts/usable": 7, "batch/trained_tokens": 12345, "train/loss": 0.125, "time/iteration_s": 61},
        1: {"reward/mean": 0.5},
    }  # fmt: skip
    out = io.StringIO()
    text = _render(summary_table(logged, 4, {1: 30.0}), Console(file=out, width=160), out)
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert [cell.strip() for cell in rows[0].split("│")[1:-1]] == ["0", "0.250", "0.500", "0.750", "6", "2", "12,345", "0.125", "61s"]
    assert [cell.strip() for cell in rows[1].split("│")[1:-1]] == ["1", "0.500", "-", "-", "-", "0", "-", "-", "30s"]


def test_summary_table_counts_cut_rollouts_apart_from_failed_ones() -> None:
    logged = {0: {"reward/mean": 0.5, "rollouts/ok": 6, "rollouts/timeout": 1, "rollouts/cut": 2}, 1: {"reward/mean": 0.5, "rollouts/ok": 8}}
    out = io.StringIO()
    text = _render(summary_table(logged, 4, {}), Console(file=out, width=160), out)
    header = next(line for line in text.splitlines() if "failed" in line)
    assert [cell.strip() for cell in header.split("┃")[1:-1]][4:7] == ["ok", "failed", "cut"]
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert [cell.strip() for cell in rows[0].split("│")[1:-1]][4:7] == ["6", "1", "2"]
    assert [cell.strip() for cell in rows[1].split("│")[1:-1]][4:7] == ["8", "0", "-"]


def test_summary_table_fits_an_80_column_terminal_without_cutting_a_header() -> None:
    logged = {
        i: {"reward/mean": 0.5, "pass_at_1": 0.5, "pass_at_k": 1.0, "rollouts/ok": 160, "rollouts/timeout": 2,
            "batch/trained_tokens": 1_234_567, "train/loss": -0.0123, "time/iteration_s": 1234}
        for i in range(12)
    }  # fmt: skip
    out = io.StringIO()
    text = _render(summary_table(logged, 16, {}), Console(file=out, width=80), out)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # rich cuts what does not fit with an ellipsis
    assert "1,234,567" in text and "pass@16" in text


def test_the_closing_line_says_whether_pass_at_1_rose_from_the_first_iteration_to_the_last() -> None:
    rose = {0: {"pass_at_1": 0.5}, 1: {"pass_at_1": 0.25}, 2: {"pass_at_1": 0.9375}}
    assert rise_line(rose) == "pass@1 rose: 0.500 at iteration 0, 0.938 at iteration 2 (+0.438)."
    flat = {3: {"pass_at_1": 0.625}, 4: {"reward/mean": 1.0}, 5: {"pass_at_1": 0.625}}
    assert rise_line(flat) == "pass@1 did not rise in this run: 0.625 at iteration 3, 0.625 at iteration 5 (+0.000)."
    assert rise_line({0: {"pass_at_1": 0.5}, 1: {"reward/mean": 1.0}}).startswith("One iteration with a pass rate")


def test_without_a_terminal_each_phase_change_and_finished_rollout_is_a_plain_line(tmp_path: Path) -> None:
    out = io.StringIO()
    view = RunView(Console(file=out, width=160))  # a file: not a terminal, as a CI log or a pod's log
    view.start_iteration(2)
    for event in [
        NodeEvent("prepare", "prepare", NodePhase.RUNNING),
        NodeEvent("prepare", "prepare", NodePhase.SUCCEEDED),
        NodeEvent("rollout", "rollout", NodePhase.RUNNING, fan_out=2),
        NodeEvent("rollout", "rollout(0)", NodePhase.RUNNING),
        NodeEvent("rollout", "rollout(0)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "a", "ok")),
        NodeEvent("rollout", "rollout(1)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "b", "timeout")),
        NodeEvent("score", "score", NodePhase.FAILED, "exit code 1\nlong log"),
    ]:
        view.observe(event)

    assert out.getvalue().splitlines() == [
        "it 2 · prepare: running",
        "it 2 · prepare: done in 0 s",
        "it 2 · rollout (2 rollouts): running",
        "it 2 · rollout(0): ok in 0 s",
        "it 2 · rollout(1): failed (timeout)",
        "it 2 · score: failed: exit code 1",
    ]


def test_on_a_terminal_the_live_view_alone_shows_progress() -> None:
    out = io.StringIO()
    view = RunView(Console(file=out, width=160, force_terminal=True))
    view.start_iteration(0)
    view.observe(NodeEvent("prepare", "prepare", NodePhase.SUCCEEDED))

    assert "it 0 · prepare:" not in out.getvalue()


def test_the_next_iterations_overlapped_rollouts_count_on_their_own_row(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=True, color_system=None)  # the live rows, no colour codes
    view = RunView(console)
    view.start_iteration(3)
    events = [
        NodeEvent("rollout", "generate.rollout", NodePhase.RUNNING, fan_out=2),
        NodeEvent("rollout", "generate.rollout(0)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "a", "ok")),
        NodeEvent("rollout", "generate-next.rollout", NodePhase.RUNNING, fan_out=3),
        NodeEvent("rollout", "generate-next.rollout(0)", NodePhase.SUCCEEDED, outputs=_outcome(tmp_path, "b", "timeout")),
        NodeEvent("serve", "generate-next.serve", NodePhase.DAEMONED),
    ]
    for event in events:
        view.observe(event)
    lines = _render(view.progress, console, out).splitlines()
    row = next(line for line in reversed(lines) if "it 4 · rollout (overlapped)" in line)
    assert "1/3" in row and "ok 0 · failed 1" in row
    assert any("it 3 · rollout " in line and "1/2" in line and "ok 1 · failed 0" in line for line in lines)
    assert any("it 4 · serve (overlapped)" in line and "serving" in line for line in lines)
