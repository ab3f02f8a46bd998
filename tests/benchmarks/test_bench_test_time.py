"""benchmarks/bench_test_time.py: what it reads off `.ci/run`'s log, and its doc section."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_test_time as bench
from benchmarks.doc_sections import DOC, replace_section

LOG = """\
.venv/bin/openforge harness install --all
============================== slowest durations ===============================
237.22s call     tests/e2e/test_vllm_production_loop.py::test_two_iterations
95.26s setup    tests/components/trainer/test_verl_workers_cpu.py::test_one_worker
40.00s call     tests/components/trainer/test_verl_workers_cpu.py::test_two_workers
1.50s teardown tests/components/trainer/test_verl_workers_cpu.py::test_two_workers
=========================== short test summary info ============================
SKIPPED [1] tests/components/trainer/test_verl_trainer.py:154: needs a CUDA GPU
========== 2012 passed, 2 skipped, 36 warnings in 1422.08s (0:23:42) ===========
"""


def _result(**changes) -> dict:
    return {
        "commit": "abc1234", "date": "2026-12-07 16:00 UTC", "machine": "2 CPU cores", "fresh": True, "exit_code": 0,
        "wall_s": 1620.0, "pytest_s": 1422.08, "cpu_s": 2200.0, "load_before": [1.0, 1.0, 1.0],
        "load_after": [2.0, 2.0, 2.0], "counts": {"passed": 2012, "skipped": 2},
        "slowest_files": bench.seconds_by_file(LOG), **changes,
    }  # fmt: skip


def test_the_last_summary_line_gives_the_counts_and_pytests_own_seconds() -> None:
    assert bench.pytest_summary(LOG) == ({"passed": 2012, "skipped": 2}, 1422.08)
    failed = "== 1 failed, 10 passed, 2 errors in 5.00s ==\n"
    assert bench.pytest_summary(LOG + failed) == ({"failed": 1, "passed": 10, "error": 2}, 5.0)
    assert bench.pytest_summary("make: *** [Makefile:52: .venv/.installed] Error 1\n") == ({}, None)


def test_durations_are_summed_per_file_longest_first() -> None:
    assert bench.seconds_by_file(LOG) == pytest.approx(
        {"tests/e2e/test_vllm_production_loop.py": 237.22, "tests/components/trainer/test_verl_workers_cpu.py": 136.76}
    )
    assert list(bench.seconds_by_file(LOG))[0] == "tests/e2e/test_vllm_production_loop.py"


@pytest.mark.parametrize(
    ("changes", "verdict"),
    [({}, "| met |"), ({"wall_s": 2547.0}, "| missed |"), ({"exit_code": 2, "counts": {}, "pytest_s": None}, "exit 2")],
)
def test_the_section_states_the_target_and_whether_the_run_met_it(changes: dict, verdict: str) -> None:
    section = bench.render(_result(**changes))
    assert section.startswith(f"## {bench.TITLE}\n") and verdict in section
    assert "Commit: abc1234" in section and "`tests/e2e/test_vllm_production_loop.py` | 237 |" in section


def test_the_doc_section_is_the_stored_result_rendered() -> None:
    """Re-rendering the stored result leaves docs/benchmarks.md as it is: a figure typed into the
    section, or a result stored without its section, fails here."""
    if not bench.RESULT.exists():
        assert f"## {bench.TITLE}\n" not in DOC.read_text()  # no section without a stored result
        return
    doc = DOC.read_text()
    assert replace_section(doc, bench.TITLE, bench.render(json.loads(bench.RESULT.read_text()))) == doc
