"""The cold `openforge --help` part of the overhead benchmark: its runs, its verdict, and its
subsection, rewritten alone inside the "Pipeline overhead" section."""

from __future__ import annotations

from pathlib import Path

from benchmarks.doc_sections import replace_subsection
from benchmarks.overhead import cli_start, report
from benchmarks.overhead.breakdown import split_iteration
from benchmarks.overhead.probes import IterationEvents, TimedEvent

REPO = Path(__file__).resolve().parents[2]


def _start(*runs_s: float) -> cli_start.CliStart:
    floors = {"a bare interpreter": 0.04, "importing typer alone": 0.19}
    return cli_start.CliStart("cmd --cli-start", "today", "abc1234", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), runs_s, floors)


def test_each_run_is_a_fresh_openforge_help_timed_to_its_exit() -> None:
    runs = cli_start.help_seconds(REPO, runs=2)
    floors = cli_start.floor_seconds(REPO, runs=1)
    assert len(runs) == 2 and all(0 < s < 60 for s in runs)
    assert set(floors) == set(cli_start.FLOORS) and all(0 < s < 60 for s in floors.values())


def test_the_verdict_is_on_the_median_and_the_subsection_says_how_it_was_made() -> None:
    fast, slow = _start(0.2, 0.25, 0.9), _start(0.2, 0.35, 0.4)

    text = cli_start.subsection_markdown(fast)

    assert cli_start.target_met(fast) and not cli_start.target_met(slow)
    assert text.startswith("### Cold start of `openforge --help`\n")
    assert "Command: `cmd --cli-start`. Date: today. Commit: abc1234." in text
    assert "3 runs" in text and "median 0.250 s (fastest 0.200 s, slowest 0.900 s)" in text
    assert "a bare interpreter 0.040 s, importing typer alone 0.190 s" in text
    assert "**PASS**" in cli_start.subsection_markdown(fast) and "**FAIL**" in cli_start.subsection_markdown(slow)


def test_the_quick_part_rewrites_its_subsection_and_nothing_else() -> None:
    doc = "# B\n\n## Pipeline overhead\n\nfigures\n\n### Target\n\n- PASS\n\n## Learning\n\ncurve\n"
    first = cli_start.subsection_markdown(_start(0.5))

    added = replace_subsection(doc, report.SECTION, cli_start.SUBSECTION, first)
    again = replace_subsection(added, report.SECTION, cli_start.SUBSECTION, cli_start.subsection_markdown(_start(0.2)))

    assert added == doc.replace("- PASS\n\n", "- PASS\n\n" + first + "\n")
    assert again == added.replace(first, cli_start.subsection_markdown(_start(0.2)))
    assert again.endswith("## Learning\n\ncurve\n")



def test_the_full_run_writes_the_subsection_last_where_the_quick_part_finds_it() -> None:
    events = IterationEvents(0.0, [TimedEvent(0.0, "prepare", "prepare", "running"), TimedEvent(10.0, "prepare", "prepare", "succeeded")])
    split = split_iteration(0, events, 10.0, [(1.0, 9.0)], {}, update_s=0.0)
    info = report.RunInfo("cmd", "today", "abc1234", "sandbox", "2 cores", (1.0, 1.0, 1.0), (2.0, 2.0, 2.0), 12.0, 0.12)
    start = _start(0.2)

    text = report.section_markdown(info, [split], [report.SweepPoint(1, 1, split)], {}, "quickstart", "sweep", start)

    assert text.endswith("\n\n" + cli_start.subsection_markdown(start))
    assert replace_subsection(text, report.SECTION, cli_start.SUBSECTION, cli_start.subsection_markdown(start)) == text
