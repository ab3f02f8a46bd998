"""The proxy benchmark's smoke run (``bench_proxy.py --quick``) and its pure helpers.

The quick run starts real servers on loopback and makes a few thousand calls in a few
seconds; it checks that the benchmark measures and that the proxy recorded every call
it answered, not how fast anything is (no timing assertions). The doc section is checked
against the stored result it is rendered from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests._missing import missing

from benchmarks import bench_proxy
from benchmarks.doc_sections import DOC, replace_section
from benchmarks.proxy import servers, stats
from benchmarks.proxy.loadgen import LoadResult

REPO = Path(__file__).resolve().parents[2]


def _own_section(doc: str) -> str:
    """This benchmark's section of ``doc``: other benchmarks may rewrite theirs meanwhile."""
    start = doc.index(f"\n## {bench_proxy.TITLE}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start:] if end < 0 else doc[start:end]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict]:
    workdir = tmp_path_factory.mktemp("bench-proxy")
    section_before, result_before = _own_section(DOC.read_text()), bench_proxy.RESULT.read_bytes()
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_proxy.py", "--quick", "--skip-litellm", "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, f"quick benchmark failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert _own_section(DOC.read_text()) == section_before, "--quick rewrote the doc section"
    assert bench_proxy.RESULT.read_bytes() == result_before, "--quick rewrote the stored result"
    return done, json.loads((workdir / "proxy.json").read_text())


@pytest.mark.slow
def test_quick_run_measures_every_direct_call(quick_run):
    _, raw = quick_run
    direct = [c for c in raw["cells"] if c["variant"] == stats.DIRECT]
    assert {(c["stream"], c["clients"]) for c in direct} == {(False, 1), (False, 64), (True, 1), (True, 64)}
    for cell in direct:
        assert cell["ok"] == cell["calls"] > 0, cell["errors"]
        assert cell["rps"] > 0
        assert (cell["first_chunk_p50_ms"] is not None) == cell["stream"]


@pytest.mark.slow
def test_quick_run_prints_the_table_and_every_target(quick_run):
    done, raw = quick_run
    assert "Proxy overhead against a fast upstream" in done.stdout
    assert len(raw["verdicts"]) == 6
    assert "throughput at 64 clients" in done.stdout


@pytest.mark.slow
def test_quick_run_through_the_proxy_records_every_answered_call(quick_run):
    why_not = servers.our_proxy_available()
    if why_not:
        missing(f"the OpenForge proxy cannot run here: {why_not}")
    _, raw = quick_run
    ours = [c for c in raw["cells"] if c["variant"] == stats.OURS]
    assert len(ours) == 4 and all(c["ok"] == c["calls"] > 0 for c in ours), [c["errors"] for c in ours]
    recording = raw["recording"]
    assert recording["invalid"] == []
    assert recording["lines"] == recording["answered"] > 0
    memory = raw["memory"]
    assert memory["ok"] == memory["calls"] > 0
    assert len(memory["samples"]) >= 10


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert stats.percentile(values, 50) == 50.0
    assert stats.percentile(values, 99) == 99.0
    assert stats.percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert stats.percentile([7.0], 1) == 7.0


def test_fitted_growth_finds_a_leak_and_ignores_a_flat_line():
    flat = [(n, 50.0 + (0.1 if n % 2000 else 0.0)) for n in range(1000, 100_001, 1000)]
    leak = [(n, 50.0 + n * 1e-4) for n in range(1000, 100_001, 1000)]  # 10 MiB per 100k calls
    assert abs(stats.fitted_growth(flat)) < 0.5
    assert stats.fitted_growth(leak) == pytest.approx(10.0)


def _result(latency: float, wall_s: float, stream: bool = False) -> LoadResult:
    return LoadResult(clients=1, stream="on" if stream else "off", calls=2, ok=2, failed=0, answered=2, errors=[],
                      wall_s=wall_s, latency_ms=[latency, latency], first_chunk_ms=[latency / 2] * 2 if stream else [])


def test_throughput_target_fails_below_twice_litellm():
    cells = [
        stats.pool(variant, False, 64, [_result(latency, wall)], 0.0)
        for variant, latency, wall in ((stats.DIRECT, 1.0, 1.0), (stats.OURS, 2.0, 2.0), (stats.LITELLM, 3.0, 3.0))
    ]
    verdicts = {v.target: v for v in stats.verdicts(stats.rows(cells), None, None)}
    plain = verdicts["throughput at 64 clients >= 2x LiteLLM (non-streaming)"]
    assert plain.passed is False and plain.measured == "1.50x"
    assert verdicts["throughput at 64 clients >= 2x LiteLLM (streaming)"].passed is None


def test_doc_section_carries_the_stamp_the_table_and_every_verdict():
    cells = [
        stats.pool(variant, stream, 1, [_result(latency, 1.0, stream)], 0.001)
        for stream in (False, True) for variant, latency in ((stats.DIRECT, 0.3), (stats.OURS, 0.8))
    ]
    verdicts = stats.verdicts(stats.rows(cells), None, None)
    raw = {"command": "make it", "date": "today", "commit": "abc1234", "machine": "two cores", "load": "1.0",
           "priority": "normal", "litellm": "left out", "plan": bench_proxy.QUICK.model_dump(),
           "cells": [c.model_dump() for c in cells], "memory": None, "recording": None,
           "verdicts": [v.model_dump() for v in verdicts]}  # fmt: skip
    section = bench_proxy.section(json.loads(json.dumps(raw)))  # as stored: the plan's keys become strings
    assert section.startswith("## Recording proxy\n")
    assert "`make it`" in section and "today" in section and "abc1234" in section and "two cores" in section
    assert "Rendered from `benchmarks/results/proxy.json`." in section
    assert section.count("| OpenForge proxy |") == 2
    assert "| no | 1 | OpenForge proxy | 2 | 0.800 | 0.800 | +0.500 |" in section
    for verdict in verdicts:
        assert verdict.target in section
    assert "**PASS** added p50 latency < 1 ms at 1 client (non-streaming): +0.500 ms" in section
    assert "100 calls at 1 client, 300 calls at 64 clients" in section
    assert "0.500 ms inside the 1 ms target at the tighter" in section


def test_the_doc_section_is_the_stored_result_rendered():
    """Re-rendering benchmarks/results/proxy.json leaves docs/benchmarks.md as it is: a figure
    typed into the section, or a result stored without its rendering, fails here."""
    doc = DOC.read_text()
    raw = json.loads(bench_proxy.RESULT.read_text())
    assert replace_section(doc, bench_proxy.TITLE, bench_proxy.section(raw)) == doc
    section = _own_section(doc)
    assert raw["commit"] in section and raw["date"] in section
