"""Benchmark the recording proxy against direct calls and LiteLLM's proxy, in one run.

    make bench-proxy                                          # full run: stores, rewrites its doc section
    .venv/bin/python benchmarks/bench_proxy.py --render       # the doc section from the stored result only
    .venv/bin/python benchmarks/bench_proxy.py --quick        # smoke run in seconds: stores nothing, doc untouched

Against one fast upstream (answers at once), for non-streamed and streamed calls at 1 and
64 concurrent clients: added latency p50/p99, time-to-first-chunk overhead and requests/s,
as ratios to direct calls; then the proxy's memory over a long run and a check that it
recorded every call it answered. A full run stores its figures in
benchmarks/results/proxy.json and renders the "Recording proxy" section of
docs/benchmarks.md from that file alone; every run also writes them, with each call's
latency, to <workdir>/proxy.json. See README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from benchmarks.doc_sections import DOC, commit_text, machine_summary, now_text, write_section
from benchmarks.proxy import report, servers, stats
from benchmarks.proxy.runs import CellRun, Plan, check_recording, run_matrix, run_memory
from benchmarks.proxy.stats import MemoryFigures, RecordingCheck

TITLE = "Recording proxy"
RESULT = servers.REPO / "benchmarks" / "results" / "proxy.json"  # the section is rendered from it alone
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


def section(raw: dict) -> str:
    """The doc section, from the stored result alone (``RESULT``)."""
    rows = stats.rows([stats.Cell(**c) for c in raw["cells"]])
    memory = MemoryFigures(**raw["memory"]) if raw["memory"] else None
    recording = RecordingCheck(**raw["recording"]) if raw["recording"] else None
    verdicts = [stats.Verdict(**v) for v in raw["verdicts"]]
    lines = [
        f"## {TITLE}",
        "",
        f"Command: `{raw['command']}` (the `bench-proxy` make target). Date: {raw['date']}. Commit: {raw['commit']}. "
        f"Machine: {raw['machine']}; load average {raw['load']} (other work shares the cores: the higher, "
        f"the noisier the figures); {raw['priority']}. Rendered from `{RESULT.relative_to(servers.REPO)}`.",
        "",
        "What runs, all on 127.0.0.1 in separate processes: a fast upstream that answers at once "
        "with vLLM's shape (`benchmarks/proxy/fast_upstream.py`: 128 prompt token ids, 8 completion "
        "tokens with logprobs; streamed as a role chunk, 8 token chunks, a finish chunk, a usage chunk "
        "and `[DONE]`); the load generator (`benchmarks/proxy/loadgen.py`, aiohttp, one keep-alive "
        "connection per client, warm-up before each measurement); and in front of the upstream either "
        "nothing (direct), the OpenForge recording proxy (one process, recording every call to "
        "`<session>.jsonl`, one session per client), or LiteLLM's proxy "
        f"({raw['litellm']}; one uvicorn worker like ours, no database, no callbacks, spend and error "
        "logs off, no master key check, access log off, local cost map, outbound traffic blocked). "
        f"{_plan_text(Plan(**raw['plan']))} Variants run back to back for each cell, in an order that rotates per "
        "round, so the machine's noise falls on all of them; figures pool the rounds.",
        "",
        "| " + " | ".join(report.HEADERS) + " |",
        "|" + "|".join("---" if h == "path" else "---:" for h in report.HEADERS) + "|",
        *("| " + " | ".join(cells) + " |" for cells in report.table_rows(rows)),
        "",
        "*+* = this path's figure minus the direct path's (added by the proxy); *x direct* = this "
        "path's figure divided by the direct path's; *1st chunk* = request sent to the first body bytes "
        "of a streamed answer; *server CPU* = CPU time of the process in front of the client per call (the "
        "proxy's own, or the upstream's on the direct path), the figure least moved by the machine's noise.",
        "",
    ]
    if memory:
        lines += [report.memory_line(memory) + ".", ""]
    if recording:
        lines += [f"Recording check: {recording.summary}.", ""]
    lines += ["Targets:", "", *(f"- **{report.verdict_mark(v)}** {v.target}: {v.measured}" for v in verdicts)]
    return "\n".join(lines + _reading(rows)) + "\n"


def _reading(rows: list[stats.Row]) -> list[str]:
    """What the 1-client figures say against the latency target, from the figures."""
    ours = {r.cell.stream: r for r in rows if (r.cell.variant, r.cell.clients) == (stats.OURS, 1)}
    if len(ours) < 2:
        return []
    plain, streamed = ours[False], ours[True]
    margin = stats.ADDED_P50_LIMIT_MS - max(plain.added_p50_ms, streamed.added_p50_ms)
    return [
        "",
        f"Reading it: at 1 client the proxy adds {plain.added_p50_ms:.3f} ms to a plain call's p50 and "
        f"{streamed.added_p50_ms:.3f} ms to a streamed one's: {abs(margin):.3f} ms "
        f"{'inside' if margin >= 0 else 'over'} the {stats.ADDED_P50_LIMIT_MS:g} ms target at the tighter of the two, "
        "the figure the machine's load moves most. Its CPU per call "
        f"({plain.cell.server_cpu_ms_per_call:.2f} ms plain, {streamed.cell.server_cpu_ms_per_call:.2f} ms streamed) "
        "moves less; the instructions it executes per call (`python -m benchmarks.proxy.cpu_cost`, see "
        "benchmarks/README.md) do not move at all, and are the figure to compare before and after a change to "
        "its hot path. What a streamed call costs beyond a plain one is Python work per chunk: decoding, "
        "reassembly, and stripping the engine's extras.",
    ]


def run(quick: bool, skip_litellm: bool, workdir: Path, store: bool) -> int:
    """Measure; with ``store`` (full runs only), store the result and render the doc section from it."""
    plan = QUICK if quick else FULL
    priority = "normal CPU priority (quick run)" if quick else _raise_priority()
    lineup = _lineup(quick, skip_litellm)
    command = " ".join([".venv/bin/python", "benchmarks/bench_proxy.py", *sys.argv[1:]])
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()[0]

    runs, memory, recording = _measure(plan, lineup, workdir)

    cells = _cells(plan, runs)
    rows = stats.rows(cells)
    verdicts = stats.verdicts(rows, memory, recording)
    report.print_report(rows, memory, recording, verdicts)
    raw = {
        "command": command, "date": date, "commit": commit, "machine": machine_summary(),
        "load": f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end", "priority": priority,
        "litellm": lineup.litellm_text, "plan": plan.model_dump(), "cells": [c.model_dump() for c in cells],
        "memory": memory.model_dump() if memory else None, "recording": recording.model_dump() if recording else None,
        "verdicts": [v.model_dump() for v in verdicts],
    }  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    every_call = raw | {"runs": [r.model_dump() for r in runs]}  # each call's latency: too big to commit
    (workdir / "proxy.json").write_bytes(orjson.dumps(every_call, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    _log(f"raw results: {workdir / 'proxy.json'}")

    if any(c.failed for c in cells) or (memory and memory.ok < memory.calls):
        _log("some calls failed, so the figures do not stand; nothing stored, docs left untouched")
        return 1
    if store and not quick:
        RESULT.write_text(json.dumps(raw, indent=1) + "\n")
        write_section(TITLE, section(json.loads(RESULT.read_text())))
        _log(f"stored {RESULT} and wrote the '{TITLE}' section of {DOC}")
    if not quick:
        shutil.rmtree(workdir / "recordings", ignore_errors=True)  # about 1 GB; counted and checked above
    return 0


def render() -> int:
    """Rewrite the doc section from the stored result, measuring nothing."""
    if not RESULT.exists():
        sys.exit(f"error: no stored result at {RESULT}: run `make bench-proxy` first")
    text = section(json.loads(RESULT.read_text()))
    print(text)
    write_section(TITLE, text)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred calls per cell: a smoke run in seconds")
    parser.add_argument("--render", action="store_true", help="write the doc section from the stored result only")
    parser.add_argument("--skip-litellm", action="store_true", help="leave LiteLLM out (only with --quick)")
    parser.add_argument("--workdir", type=Path, default=servers.REPO / ".bench" / "proxy",
                        help="server logs, recordings and proxy.json (default: .bench/proxy)")
    parser.add_argument("--no-doc", action="store_true",
                        help=f"store nothing in {RESULT.relative_to(servers.REPO)} and leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if args.render:
        sys.exit(render())
    sys.exit(run(args.quick, args.skip_litellm, args.workdir.resolve(), store=not args.no_doc))


if __name__ == "__main__":
    main()
