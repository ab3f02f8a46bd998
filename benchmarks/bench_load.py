"""Hold the recording proxy under many agent sessions for minutes; lose no call, leak no memory.

    make bench-load                                                   # 256 sessions, 600 s, rewrites docs/reliability.md
    .venv/bin/python benchmarks/bench_load.py --duration-s 20 --sessions 64 --no-doc   # a look in seconds

One proxy subprocess (the `openforge proxy` CLI) in front of the fast upstream
(benchmarks/proxy/fast_upstream.py); ``benchmarks/load/client.py`` in a process of its own
runs the sessions (multi-turn, streamed and plain, a unique marker per request). The
proxy's resident memory is sampled every ``--sample-every-s``; at the end every call a
client saw complete is looked up on disk. Exit 1 on a lost call, a failed call, or memory
growth past the bounds below after warm-up. Raw figures go to <workdir>/load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import commit_text, machine_summary, now_text, replace_marked
from benchmarks.load.client import marker_of_request
from benchmarks.proxy import servers
from benchmarks.proxy.runs import _tree_rss_mib
from benchmarks.proxy.stats import GROWTH_LIMIT_MIB_PER_100K, MIN_CALLS_TO_JUDGE_GROWTH, fitted_growth

REPO = servers.REPO
DOC = REPO / "docs" / "reliability.md"
MARKED = "bench-load"  # the block of docs/reliability.md this benchmark rewrites
RESULT = REPO / "benchmarks" / "results" / "load.json"  # the block is rendered from it alone
# After warm-up the proxy's RSS may rise at most this much above its first post-warm-up sample
# (sessions, pools and caches are all filled by then), and, over a run long enough to tell a
# trend from the allocator's ups and downs, its fitted slope stays under bench-proxy's limit.
MAX_GROWTH_AFTER_WARMUP_MIB = 64.0


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _sample(proxy: servers.ServerProcess, t0: float) -> dict:
    with urllib.request.urlopen(proxy.base_url + "/health", timeout=10) as resp:
        recorded = json.load(resp)["calls_recorded"]
    return {"t_s": round(time.monotonic() - t0, 1), "calls": recorded, "rss_mib": round(_tree_rss_mib(proxy.pid), 2)}


def _drive(args: argparse.Namespace, workdir: Path, out: Path) -> tuple[dict, list[dict], float]:
    """Start the servers, run the client process, sample the proxy; returns the client's result,
    the samples and the proxy's idle RSS."""
    result_path = workdir / "client.json"
    result_path.unlink(missing_ok=True)
    with servers.upstream(workdir) as up, servers.our_proxy(up.base_url, out, workdir) as proxy:
        idle = _tree_rss_mib(proxy.pid)
        argv = [sys.executable, "-m", "benchmarks.load.client", "--base", proxy.base_url, "--sessions",
                str(args.sessions), "--duration-s", str(args.duration_s), "--turns", str(args.turns),
                "--result", str(result_path)]  # fmt: skip
        _log(f"{args.sessions} sessions for {args.duration_s:g} s through {proxy.base_url} (proxy RSS {idle:.1f} MiB idle)")
        samples: list[dict] = []
        with (workdir / "client.log").open("wb") as log:
            client = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
            t0 = time.monotonic()
            try:
                next_at = t0 + args.sample_every_s
                while client.poll() is None:
                    if time.monotonic() > t0 + args.duration_s + 120:
                        raise RuntimeError("the load client did not finish two minutes past its duration")
                    time.sleep(max(0.0, min(0.5, next_at - time.monotonic())))
                    if time.monotonic() >= next_at:
                        samples.append(_sample(proxy, t0))
                        next_at += args.sample_every_s
                        if len(samples) % 6 == 0:
                            _log(f"{samples[-1]['t_s']:.0f} s: {samples[-1]['calls']:,} calls recorded, "
                                 f"proxy RSS {samples[-1]['rss_mib']:.1f} MiB")
                samples.append(_sample(proxy, t0))
            finally:
                if client.poll() is None:
                    client.kill()
        if client.returncode != 0 or not result_path.exists():
            tail = (workdir / "client.log").read_text(errors="replace")[-1500:]
            raise RuntimeError(f"the load client failed (exit {client.returncode}):\n{tail}")
    return json.loads(result_path.read_bytes()), samples, idle


def check_disk(out: Path, completed: dict[str, list[int]]) -> dict:
    """Read every session file back (each record validated, call_index contiguous) and look up
    every call a client saw complete: it must be there, once, recorded ok."""
    from components.core.trajectory import TrajectoryError, read_session

    invalid: list[str] = []
    ok_markers: set[str] = set()
    records = duplicates = 0
    for path in sorted(out.glob("*.jsonl")):
        try:
            calls = read_session(path)
        except TrajectoryError as exc:
            invalid.append(str(exc)[:300])
            continue
        records += len(calls)
        for call in calls:
            marker = marker_of_request(call.request)
            duplicates += marker in ok_markers
            if call.ok and marker is not None:
                ok_markers.add(marker)
    lost = [f"{sid}-{n}" for sid, ns in completed.items() for n in ns if f"{sid}-{n}" not in ok_markers]
    return {"records": records, "sessions": len(list(out.glob("*.jsonl"))), "invalid": invalid[:5],
            "lost": len(lost), "lost_samples": lost[:5], "duplicates": duplicates}  # fmt: skip


def memory_figures(samples: list[dict], idle: float, warmup_s: float) -> dict:
    steady = [s for s in samples if s["t_s"] >= warmup_s]
    rss = [s["rss_mib"] for s in samples]
    figures = {"idle_mib": round(idle, 1), "first_mib": rss[0], "last_mib": rss[-1], "max_mib": max(rss),
               "samples": samples, "warmup_s": warmup_s, "steady_samples": len(steady)}  # fmt: skip
    if len(steady) >= 2:
        figures["growth_after_warmup_mib"] = round(max(s["rss_mib"] for s in steady) - steady[0]["rss_mib"], 2)
        figures["slope_mib_per_min"] = round(fitted_growth([(s["t_s"], s["rss_mib"]) for s in steady]) / 100_000 * 60, 3)
        figures["slope_mib_per_100k_calls"] = round(fitted_growth([(s["calls"], s["rss_mib"]) for s in steady]), 3)
        figures["steady_calls"] = steady[-1]["calls"] - steady[0]["calls"]
    return figures


def verdicts(client: dict, disk: dict, memory: dict) -> list[dict]:
    out = [
        {"target": "every call a client saw complete is on disk, ok", "passed": disk["lost"] == 0 and not disk["invalid"],
         "measured": f"{disk['lost']} lost of {client['ok']:,}; {len(disk['invalid'])} unreadable files"},
        {"target": "no failed call", "passed": client["errors"] == 0, "measured": f"{client['errors']} errors"},
    ]  # fmt: skip
    if "growth_after_warmup_mib" in memory:
        growth = memory["growth_after_warmup_mib"]
        out.append({"target": f"RSS after warm-up rises < {MAX_GROWTH_AFTER_WARMUP_MIB:g} MiB",
                    "passed": growth < MAX_GROWTH_AFTER_WARMUP_MIB, "measured": f"{growth:+.1f} MiB"})  # fmt: skip
        judged = memory["steady_calls"] >= MIN_CALLS_TO_JUDGE_GROWTH
        slope = memory["slope_mib_per_100k_calls"]
        out.append({"target": f"fitted RSS slope after warm-up < {GROWTH_LIMIT_MIB_PER_100K:g} MiB per 100k calls",
                    "passed": slope < GROWTH_LIMIT_MIB_PER_100K if judged else None,
                    "measured": f"{slope:+.2f} MiB per 100k calls" + ("" if judged else " (too few calls to judge)")})
    else:
        out.append({"target": "RSS after warm-up", "passed": None, "measured": "fewer than 2 samples after warm-up"})
    return out


def section(raw: dict) -> str:
    """The doc block, from the stored result alone (``RESULT``)."""
    client, disk, memory, checks = raw["client"], raw["disk"], raw["memory"], raw["verdicts"]
    rate = client["ok"] / client["wall_s"]
    slope = (f"{memory['slope_mib_per_100k_calls']:+.2f} MiB per 100k calls ({memory['slope_mib_per_min']:+.3f} MiB/min)"
             if "slope_mib_per_min" in memory else "not measured")  # fmt: skip
    mark = {True: "PASS", False: "FAIL", None: "NOT JUDGED"}
    rows = [
        ("sessions", f"{client['sessions']} (chat, {client['turns']} turns then the history resets; streamed and plain alternate)"),
        ("duration", f"{client['wall_s']:.0f} s, warm-up {memory['warmup_s']:g} s"),
        ("calls completed", f"{client['ok']:,} ({client['streamed']:,} of {client['calls']:,} sent were streamed)"),
        ("throughput", f"{rate:,.0f} calls/s"),
        ("latency p50 / p99", f"{client['p50_ms']:.1f} / {client['p99_ms']:.1f} ms" if client["ok"] else "no call completed"),
        ("errors", f"{client['errors']}"),
        ("lost calls (complete for the client, not ok on disk)", f"{disk['lost']} ({disk['records']:,} records in {disk['sessions']} files)"),
        ("proxy RSS idle / first / last / max", f"{memory['idle_mib']:.1f} / {memory['first_mib']:.1f} / {memory['last_mib']:.1f} / {memory['max_mib']:.1f} MiB"),
        ("RSS slope after warm-up", slope),
    ]  # fmt: skip
    lines = [f"Made by `{raw['command']}` on {raw['date']}, at commit {raw['commit']}; {raw['machine']}; load average "
             f"{raw['load']}. Rendered from `benchmarks/results/load.json`.", "",
             "| figure | value |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows), ""]  # fmt: skip
    lines += [f"- **{mark[c['passed']]}** {c['target']}: {c['measured']}" for c in checks]
    return "\n".join(lines)


def write_doc(text: str, path: Path = DOC) -> None:
    """Replace what sits between the bench-load markers, keeping the rest of the page as it is now."""
    path.write_text(replace_marked(path.read_text(), MARKED, text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=600.0)
    parser.add_argument("--sessions", type=int, default=256)
    parser.add_argument("--turns", type=int, default=8, help="calls per episode before a session's history resets")
    parser.add_argument("--warmup-s", type=float, help="samples before this are left out of the RSS bounds "
                        "(default: a fifth of the run, at most 60 s)")  # fmt: skip
    parser.add_argument("--sample-every-s", type=float, default=10.0)
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "load")
    parser.add_argument("--no-doc", action="store_true", help=f"do not rewrite {DOC.relative_to(REPO)}")
    parser.add_argument("--keep-recordings", action="store_true", help="keep <workdir>/recordings after the check")
    args = parser.parse_args()
    warmup_s = args.warmup_s if args.warmup_s is not None else min(60.0, args.duration_s / 5)
    workdir = args.workdir.resolve()
    out = workdir / "recordings"
    shutil.rmtree(out, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/bench_load.py", *sys.argv[1:]])
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()[0]

    client, samples, idle = _drive(args, workdir, out)
    _log(f"checking {client['ok']:,} completed calls against the session files")
    disk = check_disk(out, client.pop("completed"))
    memory = memory_figures(samples, idle, warmup_s)
    checks = verdicts(client, disk, memory)
    load = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    raw = {"command": command, "date": date, "commit": commit, "machine": machine_summary(), "load": load,
           "client": client, "disk": disk, "memory": memory, "verdicts": checks,
           "passed": all(c["passed"] is not False for c in checks)}  # fmt: skip
    text = section(raw)
    print(text, flush=True)
    (workdir / "load.json").write_text(json.dumps(raw, indent=2))
    if not args.no_doc:
        RESULT.write_text(json.dumps(raw, indent=1) + "\n")
        write_doc(text)
        _log(f"wrote {RESULT} and the bench-load section of {DOC}")
    if not args.keep_recordings:
        shutil.rmtree(out, ignore_errors=True)  # gigabytes on a full run; checked above
    print(json.dumps({k: raw[k] for k in ("passed", "verdicts")} | {"load_json": str(workdir / "load.json")}))
    return 0 if raw["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
