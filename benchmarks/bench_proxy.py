"""Benchmark the recording proxy against direct calls and LiteLLM's proxy, in one run.

    .venv/bin/python benchmarks/bench_proxy.py            # full run, rewrites docs/benchmarks.md
    .venv/bin/python benchmarks/bench_proxy.py --quick    # smoke run in seconds, doc untouched

Against one fast upstream (answers at once), for non-streamed and streamed calls at 1 and
64 concurrent clients: added latency p50/p99, time-to-first-chunk overhead and requests/s,
as ratios to direct calls; then the proxy's memory over a long run and a check that it
recorded every call it answered. Raw results go to <workdir>/proxy.json. See README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from benchmarks.doc_sections import DOC, machine_summary, now_text
from benchmarks.proxy import report, servers, stats
from benchmarks.proxy.runs import CellRun, Plan, check_recording, run_matrix, run_memory
from benchmarks.proxy.stats import MemoryFigures, RecordingCheck

FULL = Plan(rounds=2, calls={1: 1000, 64: 5000}, warmup={1: 100, 64: 500}, memory_calls=100_000,
            progress_every=1000, cell_time_limit_s=60, memory_time_limit_s=900)
QUICK = Plan(rounds=1, calls={1: 100, 64: 300}, warmup={1: 10, 64: 64}, memory_calls=2000,
             progress_every=100, cell_time_limit_s=20, memory_time_limit_s=120)
_NICE_RAISE = 10


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _plan_text(plan: Plan) -> str:
    per_round = ", ".join(f"{n:,} calls at {c} client{'s' if c > 1 else ''}" for c, n in sorted(plan.calls.items()))
    warm = " / ".join(f"{plan.warmup[c]:,}" for c in sorted(plan.calls))
    return (f"Each of {plan.rounds} rounds measures every cell once: {per_round}, or as many as fit in "
            f"{plan.cell_time_limit_s:.0f} s (a slow server makes fewer calls; the table counts them), after "
            f"{warm} warm-up calls.")


class _Lineup(NamedTuple):
    """Which proxies this run measures; ``litellm_text`` is LiteLLM's version or why it is left out."""

    ours: bool
    litellm: bool
    litellm_text: str


def _lineup(quick: bool, skip_litellm: bool) -> _Lineup:
    """What can run here; a full run insists on every variant, a quick run says what it leaves out."""
    why_not_ours = servers.our_proxy_available()
    if why_not_ours:
        if not quick:
            sys.exit(f"error: the OpenForge proxy cannot run: {why_not_ours}")
        _log(f"OpenForge proxy left out of this quick run: {why_not_ours}")
    if skip_litellm:
        if not quick:
            sys.exit("error: --skip-litellm is for --quick runs; the full run compares against LiteLLM")
        return _Lineup(why_not_ours is None, False, "left out (--skip-litellm)")
    why_not_litellm = servers.litellm_available()
    if why_not_litellm:
        if not quick:
            sys.exit(f"error: LiteLLM cannot run: {why_not_litellm}")
        _log(f"LiteLLM left out of this quick run: {why_not_litellm}")
        return _Lineup(why_not_ours is None, False, f"left out ({why_not_litellm})")
    return _Lineup(why_not_ours is None, True, f"LiteLLM {servers.LITELLM_VERSION}")


def _raise_priority() -> str:
    """Run this process and every server and load generator it starts (they inherit it)
    at a raised CPU priority, so that other work on the shared cores delays them less.
    All variants get the same priority; the doc says which was in force."""
    try:
        os.nice(-_NICE_RAISE)
    except PermissionError:
        return "normal CPU priority (raising it needs root)"
    return f"CPU priority raised by {_NICE_RAISE} (nice) for every process of the run"


def _measure(plan: Plan, lineup: _Lineup, workdir: Path) -> tuple[list[CellRun], MemoryFigures | None,
                                                                   RecordingCheck | None]:
    """Start the servers, run the matrix, then the memory run on a fresh proxy; stop everything."""
    shutil.rmtree(workdir / "recordings", ignore_errors=True)
    matrix_out, memory_out = workdir / "recordings" / "matrix", workdir / "recordings" / "memory"
    with contextlib.ExitStack() as stack:
        _log("starting the fast upstream" + (", our proxy" if lineup.ours else "")
             + (", LiteLLM" if lineup.litellm else ""))
        up = stack.enter_context(servers.upstream(workdir))
        targets = {stats.DIRECT: (up.base_url, up.pid)}
        with contextlib.ExitStack() as proxies:
            if lineup.ours:
                ours = proxies.enter_context(servers.our_proxy(up.base_url, matrix_out, workdir))
                targets[stats.OURS] = (ours.base_url, ours.pid)
            if lineup.litellm:
                lite = proxies.enter_context(servers.litellm_proxy(up.base_url, workdir))
                targets[stats.LITELLM] = (lite.base_url, lite.pid)
            runs = run_matrix(plan, targets, _log)
        if not lineup.ours:
            return runs, None, None
        # The memory run gets a fresh proxy and, the other proxies stopped, the machine.
        proxy = stack.enter_context(servers.our_proxy(up.base_url, memory_out, workdir / "memory"))
        _log(f"memory run: {plan.memory_calls:,} calls through a fresh proxy")
        memory, memory_answered = run_memory(plan, proxy.base_url, proxy.pid, _log)
    matrix_answered = sum(r.result.answered for r in runs if r.variant == stats.OURS)
    recording = check_recording([(matrix_out, matrix_answered), (memory_out, memory_answered)], validate=True)
    return runs, memory, recording


def _cells(plan: Plan, runs: list[CellRun]) -> list[stats.Cell]:
    variants = list(dict.fromkeys(r.variant for r in runs))
    cells = []
    for stream, clients, variant in itertools.product((False, True), sorted(plan.calls), variants):
        mine = [r for r in runs if (r.variant, r.stream, r.clients) == (variant, stream, clients)]
        cells.append(stats.pool(variant, stream, clients, [r.result for r in mine], sum(r.server_cpu_s for r in mine)))
    return cells


def run(quick: bool, skip_litellm: bool, workdir: Path, doc: Path | None) -> int:
    plan = QUICK if quick else FULL
    priority = "normal CPU priority (quick run)" if quick else _raise_priority()
    lineup = _lineup(quick, skip_litellm)
    date = now_text()
    load_before = os.getloadavg()[0]

    runs, memory, recording = _measure(plan, lineup, workdir)

    cells = _cells(plan, runs)
    rows = stats.rows(cells)
    verdicts = stats.verdicts(rows, memory, recording)
    report.print_report(rows, memory, recording, verdicts)
    info = report.RunInfo(
        command=".venv/bin/python benchmarks/bench_proxy.py" + (" --quick" if quick else ""), date=date,
        machine=machine_summary(), load=f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
        priority=priority, litellm=lineup.litellm_text, plan=_plan_text(plan),
    )
    raw = {
        "info": info.model_dump(), "plan": plan.model_dump(), "cells": [c.model_dump() for c in cells],
        "rows": [r.model_dump() for r in rows], "verdicts": [v.model_dump() for v in verdicts],
        "memory": memory.model_dump() if memory else None, "recording": recording.model_dump() if recording else None,
        "runs": [r.model_dump() for r in runs],
    }
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "proxy.json").write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    _log(f"raw results: {workdir / 'proxy.json'}")

    if any(c.failed for c in cells) or (memory and memory.ok < memory.calls):
        _log("some calls failed, so the figures do not stand; docs left untouched")
        return 1
    if doc is not None and not quick:
        report.write_doc(doc, report.section_markdown(info, rows, memory, recording, verdicts))
        _log(f"wrote the 'Recording proxy' section of {doc}")
    if not quick:
        shutil.rmtree(workdir / "recordings", ignore_errors=True)  # about 1 GB; counted and checked above
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred calls per cell: a smoke run in seconds")
    parser.add_argument("--skip-litellm", action="store_true", help="leave LiteLLM out (only with --quick)")
    parser.add_argument("--workdir", type=Path, default=servers.REPO / ".bench" / "proxy",
                        help="server logs, recordings and proxy.json (default: .bench/proxy)")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args()
    doc = None if args.no_doc else DOC
    sys.exit(run(args.quick, args.skip_litellm, args.workdir.resolve(), doc))


if __name__ == "__main__":
    main()
