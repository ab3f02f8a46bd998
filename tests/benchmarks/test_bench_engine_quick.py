"""The engine benchmark's smoke run (``bench_engine.py --quick``) and its report.

The quick run starts real engines on loopback and plays a few short sessions through
each; it checks that the benchmark measures and that warm calls hit the cache, not how
fast anything is (no timing assertions: performance targets live in the benchmark).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_engine import QUICK, VariantResult
from benchmarks.doc_sections import DOC
from benchmarks.engine import report
from benchmarks.engine.traffic import shared_prefix

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict]:
    workdir = tmp_path_factory.mktemp("bench-engine")
    doc_before = DOC.read_bytes()
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_engine.py", "--quick", "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"quick engine benchmark failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert DOC.read_bytes() == doc_before, "--quick rewrote the doc"
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


def test_doc_section_carries_the_command_the_commit_and_a_row_per_engine():
    calls = [{"session": s, "turn": t, "prompt_tokens": 100 + t, "latency_s": 0.5} for s in range(2) for t in range(2)]
    cache = {"hits": 3, "misses": 1, "reused_tokens": 300, "prefilled_tokens": 100}

    def result(variant: str, scale: float) -> VariantResult:
        return VariantResult(variant=variant, iteration_s=10 * scale, calls=calls, cold_s=4 * scale,
                             cold_prompt_tokens=22000, warm_s=0.5 * scale, warm_prompt_tokens=22300,
                             cache_iteration=cache, cache_warm=cache)  # fmt: skip

    info = report.RunInfo(command="make it", date="today", machine="two cores", load="1.0", commit="abc1234")
    section = report.section(info, QUICK, [result(report.STORE, 1), result(report.ONE_ENTRY, 2)])
    assert section.startswith("## Dev engine: prefix cache\n")
    assert "`make it`" in section and "abc1234" in section and "two cores" in section
    assert "| store of one entry | 8.00 | 2.00 | 1.00 | 2.00 | 20.0 | 2.00 |" in section
    assert "3/4 calls, 75% of tokens" in section
