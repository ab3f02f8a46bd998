"""The engine benchmark's smoke run (``bench_engine.py --quick``) and its report.

The quick run starts real engines on loopback and plays a few short sessions through
each; it checks that the benchmark measures and that warm calls hit the cache, not how
fast anything is (no timing assertions: performance targets live in the benchmark).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import bench_engine
from benchmarks.bench_engine import QUICK, RESULT, SECTION
from benchmarks.doc_sections import DOC, replace_section
from benchmarks.engine import report
from benchmarks.engine.traffic import shared_prefix

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict]:
    workdir = tmp_path_factory.mktemp("bench-engine")
    doc_before, result_before = DOC.read_bytes(), RESULT.read_bytes()
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_engine.py", "--quick", "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"quick engine benchmark failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert DOC.read_bytes() == doc_before, "--quick rewrote the doc"
    assert RESULT.read_bytes() == result_before, "--quick rewrote the stored result"
    return done, json.loads((workdir / "engine.json").read_text())


@pytest.mark.slow
def test_quick_run_measures_both_engines_and_prints_the_table(quick_run):
    done, raw = quick_run
    results = {r["variant"]: r for r in raw["runs"]}
    assert set(results) == {report.STORE, report.ONE_ENTRY}
    for result in results.values():
        assert len(result["calls"]) == QUICK.sessions * QUICK.turns
        assert result["warm_prompt_tokens"] > result["cold_prompt_tokens"] > 0
    assert "cold call s" in done.stdout and report.ONE_ENTRY in done.stdout


@pytest.mark.slow
def test_warm_calls_hit_the_cache(quick_run):
    _, raw = quick_run
    for result in raw["runs"]:
        iteration, warm = result["cache_iteration"], result["cache_warm"]
        assert iteration["misses"] == 1  # the first session's first call; every later one shares its prefix
        assert iteration["hits"] == QUICK.sessions * QUICK.turns - 1
        assert (warm["hits"], warm["misses"]) == (1, 0)
        assert warm["reused_tokens"] >= result["cold_prompt_tokens"] - 1
    store = next(r for r in raw["runs"] if r["variant"] == report.STORE)
    assert store["cache_iteration"]["evictions"] == 0 and store["cache_iteration"]["entries"] >= QUICK.sessions


def test_the_shared_prefix_is_the_same_every_time_and_grows_with_its_settings():
    assert shared_prefix(3, 2) == shared_prefix(3, 2)
    small, large = shared_prefix(1, 1), shared_prefix(4, 3)
    assert len(large[0]) > len(small[0]) and len(large[1]) == 3


def _raw(rounds: int = 2) -> dict:
    """A stored result in small: two rounds of the store and the store of one entry."""
    calls = [{"session": s, "turn": t, "prompt_tokens": 2100 + t, "latency_s": 0.5} for s in range(2) for t in range(2)]
    cache = {"hits": 3, "misses": 1, "copies": 0, "reused_tokens": 300, "prefilled_tokens": 100, "evictions": 0,
             "entries": 2, "bytes": 3 * 2**20}  # fmt: skip

    def run(variant: str, scale: float) -> dict:
        return {"variant": variant, "iteration_s": 10 * scale, "calls": calls, "cold_s": 4 * scale,
                "cold_prompt_tokens": 22000, "warm_s": 0.5 * scale, "warm_prompt_tokens": 22300,
                "cache_iteration": cache, "cache_warm": cache}  # fmt: skip

    plan = asdict(QUICK) | {"rounds": rounds}
    runs = [run(report.STORE, 1), run(report.ONE_ENTRY, 2), run(report.ONE_ENTRY, 2.2), run(report.STORE, 1.1)]
    return {"command": "make it", "date": "today", "commit": "abc1234", "machine": "two cores", "load": "1.0",
            "plan": plan, "variants": [report.STORE, report.ONE_ENTRY], "runs": runs[: 2 * rounds]}  # fmt: skip


def test_doc_section_carries_the_command_the_commit_and_a_row_per_engine():
    section = bench_engine.section(_raw(rounds=1))
    assert section.startswith("## Dev engine: prefix cache\n")
    assert "`make it`" in section and "abc1234" in section and "two cores" in section
    assert "Rendered from `benchmarks/results/engine.json`." in section
    assert "| store of one entry | 8.00 | 2.00 | 1.00 | 2.00 | 20.0 | 2.00 |" in section
    assert "3/4 calls, 75% of tokens" in section
    assert "2 conversations in 3 MiB" in section


def test_the_rounds_are_pooled_and_each_shown():
    section = bench_engine.section(_raw(rounds=2))
    assert "| prefix-cache store | 4.20 | 1.00 | 0.53 | 1.00 | 10.5 | 1.00 |" in section
    assert "prefix-cache store 10.0 then 11.0 s; store of one entry 20.0 then 22.0 s." in section


def test_the_doc_section_is_the_stored_result_rendered():
    """Re-rendering benchmarks/results/engine.json leaves docs/benchmarks.md as it is: a figure
    typed into the section, or a result stored without its rendering, fails here."""
    doc = DOC.read_text()
    raw = json.loads(RESULT.read_text())
    assert replace_section(doc, SECTION, bench_engine.section(raw)) == doc
    assert raw["commit"] in doc and raw["date"] in doc


def test_the_reading_takes_the_engine_before_from_the_run():
    raw = _raw(rounds=1)
    before = raw["runs"][0] | {"variant": f"{report.BEFORE} (283839b)", "cold_s": 12.0, "cache_iteration": None}
    raw["runs"].append(before)
    raw["variants"].append(before["variant"])
    section = bench_engine.section(raw)
    assert "a 22k-token prompt" in section and "22k x 22k float mask (2 GB)" in section
    assert "12.0 s here, 3.0 times the store's" in section
