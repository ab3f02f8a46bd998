"""benchmarks/bench_viewer.py: its doc section, rendered from the stored result alone."""

from __future__ import annotations

import json

from benchmarks import bench_viewer as bench
from benchmarks.doc_sections import DOC, replace_section


def _raw(cold_s: list[float]) -> dict:
    return {
        "command": ".venv/bin/python benchmarks/bench_viewer.py", "date": "2026-12-07 23:10 UTC", "commit": "abc1234",
        "machine": "2 CPU cores", "load_before": [1.0, 0.5, 0.25], "load_after": [2.0, 1.0, 0.5],
        "plan": {"tasks": 125, "samples": 8, "cold_starts": len(cold_s), "warm_opens": 3},
        "results": {"rollouts": 1000, "store_files": 2004, "page_kib": 31.2, "read_kib": 419.4, "cold_s": cold_s,
                    "warm_s": [0.050, 0.044, 0.040], "later_page_s": 0.053, "rollout_page_s": 0.015},
    }  # fmt: skip


def test_the_section_shows_the_stored_figures_and_the_verdict() -> None:
    text = bench.section(_raw([0.060, 0.068, 0.055]))
    assert text.startswith(f"## {bench.SECTION}\n")
    assert "Commit: abc1234" in text and "Date: 2026-12-07 23:10 UTC" in text and "2.0, 1.0, 0.5 after" in text
    assert "A scored iteration of 1,000 rollouts (125 tasks x 8 samples" in text and "(419 KiB: plan" in text
    assert "median of 3 starts, max) | 60 ms, 68 ms |" in text and "(median of 3, p95) | 44 ms, 50 ms |" in text
    assert "| one rollout's page (its calls and conversation) | 15 ms |" in text
    assert "Rendered from `benchmarks/results/viewer.json`." in text and "this run meets it." in text
    assert "this run misses it." in bench.section(_raw([0.060, 1.2]))


def test_the_doc_section_is_the_stored_result_rendered() -> None:
    """Re-rendering benchmarks/results/viewer.json leaves docs/benchmarks.md as it is: a figure
    typed into the section, or a result stored without its rendering, fails here."""
    doc = DOC.read_text()
    raw = json.loads(bench.RESULT.read_text())
    assert replace_section(doc, bench.SECTION, bench.section(raw)) == doc
    assert f"Commit: {raw['commit']}." in doc and f"Date: {raw['date']}." in doc
