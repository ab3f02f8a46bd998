"""The load benchmark's smoke run (``bench_load.py`` for seconds, few sessions, ``--no-doc``) and its pure parts.

Like test_bench_proxy_quick.py it checks that the benchmark measures and that the proxy
recorded every call a client saw complete, not how fast anything is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_load
from benchmarks.doc_sections import replace_marked
from components.core.trajectory import RecordedCall

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict]:
    workdir = tmp_path_factory.mktemp("bench-load")
    doc_before, result_before = bench_load.DOC.read_bytes(), bench_load.RESULT.read_bytes()
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_load.py", "--duration-s", "4", "--sessions", "16", "--sample-every-s", "1",
         "--no-doc", "--workdir", str(workdir)],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, f"quick load run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert bench_load.DOC.read_bytes() == doc_before, "--no-doc rewrote the doc"
    assert bench_load.RESULT.read_bytes() == result_before, "--no-doc rewrote the stored result"
    assert not (workdir / "recordings").exists(), "the recordings were left behind"
    return done, json.loads((workdir / "load.json").read_text())


@pytest.mark.slow
def test_quick_run_finds_every_completed_call_on_disk(quick_run):
    _, raw = quick_run
    client, disk = raw["client"], raw["disk"]
    assert raw["passed"] is True
    assert client["sessions"] == 16 and client["ok"] == client["calls"] > 16 and client["errors"] == 0
    assert 0 < client["streamed"] < client["calls"]  # streamed and plain calls both ran
    assert disk["lost"] == 0 and disk["invalid"] == [] and disk["duplicates"] == 0
    assert disk["records"] == client["ok"] and disk["sessions"] == 16
    assert client["p50_ms"] <= client["p99_ms"]


@pytest.mark.slow
def test_quick_run_samples_memory_and_prints_its_summary(quick_run):
    done, raw = quick_run
    memory = raw["memory"]
    assert len(memory["samples"]) >= 3 and memory["max_mib"] >= memory["first_mib"] > 0
    assert "growth_after_warmup_mib" in memory
    assert "| lost calls (complete for the client, not ok on disk) | 0 (" in done.stdout
    summary = json.loads(done.stdout.strip().splitlines()[-1])  # the last line is the machine-readable verdict
    assert summary["passed"] is True and len(summary["verdicts"]) == 4


def _record(session: str, marker: str, index: int, error: str | None = None) -> str:
    call = RecordedCall(session_id=session, call_index=index, api="chat.completions", request={
        "messages": [{"role": "user", "content": f"[{marker}] step 0"}]}, completion_token_ids=[1],
        started_at=0.0, latency_ms=1.0, upstream_status=200, error=error)  # fmt: skip
    return call.model_dump_json() + "\n"


def test_the_disk_check_counts_a_missing_call_and_a_failed_one_as_lost(tmp_path: Path):
    (tmp_path / "load-000.jsonl").write_text(_record("load-000", "load-000-0", 0) + _record("load-000", "load-000-1", 1, "cut"))
    disk = bench_load.check_disk(tmp_path, {"load-000": [0, 1, 2]})
    assert disk["lost"] == 2 and disk["lost_samples"] == ["load-000-1", "load-000-2"] and disk["records"] == 2


def test_the_disk_check_reports_an_unreadable_file(tmp_path: Path):
    (tmp_path / "load-000.jsonl").write_text(_record("load-000", "load-000-0", 0) + '{"cut short')
    disk = bench_load.check_disk(tmp_path, {"load-000": [0]})
    assert disk["invalid"] and "truncated" in disk["invalid"][0] and disk["lost"] == 1


def test_memory_bound_fails_past_the_limit_and_is_not_judged_on_a_short_run():
    samples = [{"t_s": t, "calls": t * 100, "rss_mib": 100.0 + (80.0 if t > 30 else 0.0)} for t in range(0, 61, 10)]
    memory = bench_load.memory_figures(samples, idle=90.0, warmup_s=10)
    checks = {c["target"]: c for c in bench_load.verdicts({"ok": 1, "errors": 0}, {"lost": 0, "invalid": []}, memory)}
    assert checks[f"RSS after warm-up rises < {bench_load.MAX_GROWTH_AFTER_WARMUP_MIB:g} MiB"]["passed"] is False
    slope = [c for t, c in checks.items() if t.startswith("fitted RSS slope")][0]
    assert slope["passed"] is None  # 5,000 calls: too few to tell a trend from noise


def test_the_doc_section_is_replaced_between_its_markers_only(tmp_path: Path):
    doc = tmp_path / "reliability.md"
    doc.write_text("# Page\n\nbefore\n<!-- bench-load:begin -->\nold figures\n<!-- bench-load:end -->\nafter\n")
    bench_load.write_doc("new figures", doc)
    bench_load.write_doc("newer figures", doc)
    assert doc.read_text() == "# Page\n\nbefore\n<!-- bench-load:begin -->\nnewer figures\n<!-- bench-load:end -->\nafter\n"


def test_the_doc_block_is_the_stored_result_rendered():
    """Re-rendering benchmarks/results/load.json leaves docs/reliability.md as it is: a figure
    typed into the block, or a result stored without its rendering, fails here."""
    doc = bench_load.DOC.read_text()
    raw = json.loads(bench_load.RESULT.read_text())
    assert replace_marked(doc, bench_load.MARKED, bench_load.section(raw)) == doc
    assert raw["commit"] in doc and raw["date"] in doc
