"""The recording proxy under browser-agent load: 16 sessions sending ~200 kB screenshots.

    .venv/bin/python benchmarks/bench_screenshots.py           # full run (a few minutes): stores, rewrites its doc section
    .venv/bin/python benchmarks/bench_screenshots.py --render  # the doc section from the stored result only
    .venv/bin/python benchmarks/bench_screenshots.py --quick   # smoke run in seconds: stores nothing, doc untouched

Against the fast upstream of bench_proxy.py, direct and through the OpenForge proxy side
by side in one run (order rotating per round): every call a chat completion carrying one
PNG screenshot of random pixels as a data URL (benchmarks/proxy/screenshots.py; a quarter
repeat the previous call's). Reports request bytes/s, calls/s and added latency p50/p99,
with ratios to direct, then checks that the proxy stored every image once by hash and
that every call line refers to the screenshot it carried. A full run stores its figures in
benchmarks/results/screenshots.json and renders the doc section from that file alone;
every run also writes them, with each call's latency, to <workdir>/screenshots.json.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import DOC, Stamp, commit_text, machine_summary, now_text, write_section
from benchmarks.proxy import servers, stats
from benchmarks.proxy.image_check import ImageCheck, check_images
from benchmarks.proxy.runs import Plan, check_recording, run_matrix
from benchmarks.proxy.screenshots import ScreenshotPlan, png_screenshot

SECTION_TITLE = "Recording proxy with screenshots"
COMMAND = ".venv/bin/python benchmarks/bench_screenshots.py"
RESULT = servers.REPO / "benchmarks" / "results" / "screenshots.json"  # the section is rendered from it alone
CLIENTS = 16
SHOTS = ScreenshotPlan(seed="per-cell")  # run_matrix seeds each cell's screenshots with the cell's name
# No memory run here (bench-proxy has one): only the matrix fields of Plan matter.
_NO_MEMORY = {"memory_calls": 0, "progress_every": 0, "memory_time_limit_s": 0}
FULL = Plan(rounds=3, calls={CLIENTS: 960}, warmup={CLIENTS: 32}, cell_time_limit_s=60, streams=(False,), **_NO_MEMORY)
QUICK = Plan(rounds=1, calls={CLIENTS: 48}, warmup={CLIENTS: 16}, cell_time_limit_s=20, streams=(False,), **_NO_MEMORY)
_STAMP_FIELDS = ("command", "date", "commit", "machine", "load_before", "load_after")


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _table(rows: list[stats.Row]) -> list[str]:
    lines = ["| path | calls ok | request MB/s | x direct | calls/s | x direct | p50 ms | p99 ms | added p50 ms "
             "| added p99 ms | server CPU ms/call |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    direct = {r.cell.clients: r.cell for r in rows if r.cell.variant == stats.DIRECT}
    for row in rows:
        cell = row.cell
        bytes_ratio = cell.request_bytes_per_s / direct[cell.clients].request_bytes_per_s
        added = ("-", "-") if cell.variant == stats.DIRECT else (f"+{row.added_p50_ms:.2f}", f"+{row.added_p99_ms:.2f}")
        lines.append(
            f"| {stats.VARIANT_LABELS[cell.variant]} | {cell.ok:,}/{cell.calls:,} | {cell.request_bytes_per_s / 1e6:.1f} "
            f"| {bytes_ratio:.2f} | {cell.rps:.0f} | {row.rps_ratio:.2f} | {cell.p50_ms:.2f} | {cell.p99_ms:.2f} "
            f"| {added[0]} | {added[1]} | {cell.server_cpu_ms_per_call:.2f} |"
        )
    return lines


def section(raw: dict) -> str:
    """The doc section, from the stored result alone (``RESULT``)."""
    stamp = Stamp(**{k: raw[k] for k in _STAMP_FIELDS})
    plan, shot, clients = Plan.model_validate(raw["plan"]), raw["screenshot"], raw["clients"]
    rows = [stats.Row.model_validate(r) for r in raw["rows"]]
    recording, images = stats.RecordingCheck.model_validate(raw["recording"]), ImageCheck.model_validate(raw["images"])
    return "\n".join([
        f"## {SECTION_TITLE}",
        "",
        f"{stamp.stamp_line()} The `bench-screenshots` make target, at normal CPU priority; other work shares the "
        "cores (the higher the load, the noisier the figures). Rendered from `benchmarks/results/screenshots.json`.",
        "",
        f"What a browser agent sends (browser-use: one screenshot per call, not streamed), from {clients} concurrent "
        "sessions, against the fast upstream of the section above (it answers at once), directly and through the "
        f"recording proxy, in one run: {plan.rounds} round{'s' if plan.rounds > 1 else ''} of "
        f"{plan.calls[clients]:,} calls per path after {plan.warmup[clients]} warm-up calls, the two paths back to "
        "back in an order that rotates per round; figures pool the rounds. "
        f"Each request carries one PNG screenshot of random pixels ({shot['width']}x{shot['height']} RGB, "
        f"{shot['png_bytes'] / 1e3:.0f} kB, {shot['data_url_bytes'] / 1e3:.0f} kB as a base64 data URL; random "
        "pixels do not compress, so the bytes are real); "
        f"{shot['repeat_fraction']:.0%} of the calls resend the previous call's screenshot, the rest bring a "
        "new one, and every round its own. "
        "The proxy decodes each image, hashes it, writes it once to `images/<sha256>.png` (new ones only) and "
        "records the call with a reference in its place (`benchmarks/bench_screenshots.py`, "
        "`benchmarks/proxy/screenshots.py`).",
        "",
        *_table(rows),
        "",
        "*request MB/s* = request bodies of the calls answered, per second (10^6 bytes); *x direct* = this path's "
        "figure divided by the direct path's; *added* = this path's latency minus the direct path's; *server CPU* "
        "= CPU time of the process in front of the client per call (the proxy's own, or the upstream's on the "
        "direct path).",
        "",
        _reading(rows, clients, shot["data_url_bytes"]),
        "",
        f"Recording check: {recording.summary}. Images: {images.summary}.",
        "",
    ])  # fmt: skip


def _reading(rows: list[stats.Row], clients: int, data_url_bytes: int) -> str:
    """What the figures mean, from the figures: the proxy's CPU per call bounds its rate."""
    ours = next(r.cell for r in rows if r.cell.variant == stats.OURS)
    return (f"Reading it: the proxy spends {ours.server_cpu_ms_per_call:.1f} ms of CPU on each screenshot call (parse "
            f"the ~{data_url_bytes / 1e3:.0f} kB body, decode, hash and store the image, forward the call, record "
            f"it), so one proxy process answers at most about {1000 / ours.server_cpu_ms_per_call:.0f} such calls/s "
            f"on one core; with {clients} calls always in flight, most of the added latency is waiting for it "
            f"({clients} / {ours.rps:.0f} calls/s = {clients / ours.rps * 1000:.0f} ms). A rollout pod has its own "
            "proxy sidecar serving one session, whose calls wait seconds for the model between screenshots.")


def run(quick: bool, workdir: Path, store: bool) -> int:
    """Measure; with ``store`` write ``RESULT`` and the doc section, both or neither."""
    plan = QUICK if quick else FULL
    why_not = servers.our_proxy_available()
    if why_not:
        sys.exit(f"error: the OpenForge proxy cannot run: {why_not}")
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()
    out = workdir / "recordings"
    shutil.rmtree(out, ignore_errors=True)
    with contextlib.ExitStack() as stack:
        _log(f"starting the fast upstream and our proxy; {plan.rounds} round(s) of {plan.calls[CLIENTS]} calls at "
             f"{CLIENTS} clients per path")
        up = stack.enter_context(servers.upstream(workdir))
        proxy = stack.enter_context(servers.our_proxy(up.base_url, out, workdir))
        targets = {stats.DIRECT: (up.base_url, up.pid), stats.OURS: (proxy.base_url, proxy.pid)}
        runs = run_matrix(plan, targets, _log, screenshots=SHOTS)
    load_after = os.getloadavg()
    cells = [stats.pool(v, False, CLIENTS, [r.result for r in runs if r.variant == v],
                        sum(r.server_cpu_s for r in runs if r.variant == v)) for v in targets]
    answered = sum(r.result.answered for r in runs if r.variant == stats.OURS)
    recording = check_recording([(out, answered)], validate=True)
    _log("checking the image store against every call")
    images = check_images(out, SHOTS, plan.warmup[CLIENTS], plan.calls[CLIENTS])
    png = png_screenshot(random.Random(0), SHOTS.width, SHOTS.height)
    raw = {
        "command": COMMAND + (" --quick" if quick else ""), "date": date, "commit": commit,
        "machine": machine_summary(), "load_before": list(load_before), "load_after": list(load_after),
        "clients": CLIENTS, "plan": plan.model_dump(),
        "screenshot": {"width": SHOTS.width, "height": SHOTS.height, "repeat_fraction": SHOTS.repeat_fraction,
                       "png_bytes": len(png), "data_url_bytes": len(base64.b64encode(png))},
        "rows": [r.model_dump() for r in stats.rows(cells)],
        "recording": recording.model_dump() | {"ok": recording.ok}, "images": images.model_dump() | {"ok": images.ok},
        # Each run's own figures; every call's latency only in the workdir copy (tens of thousands of numbers).
        "runs": [r.model_dump(exclude={"result": {"latency_ms", "first_chunk_ms"}}) for r in runs],
    }  # fmt: skip
    text = section(raw)
    print(text)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "screenshots.json").write_text(json.dumps(raw | {"runs": [r.model_dump() for r in runs]}))
    _log(f"raw results: {workdir / 'screenshots.json'}")
    if any(c.failed for c in cells) or not recording.ok or not images.ok:
        _log("failed calls or an incomplete recording: the figures do not stand; nothing stored, docs left untouched")
        return 1
    if store:
        # The result and its rendering go together: one without the other fails the re-render test.
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(raw, indent=1) + "\n")
        write_section(SECTION_TITLE, text, DOC)
        _log(f"wrote {RESULT.relative_to(servers.REPO)} and the '{SECTION_TITLE}' section of {DOC.relative_to(servers.REPO)}")
        shutil.rmtree(out, ignore_errors=True)  # hundreds of MB of screenshots; counted and checked above
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a few dozen calls: a smoke run in seconds, stores nothing")
    mode.add_argument("--render", action="store_true", help="write the doc section from the stored result only")
    parser.add_argument("--workdir", type=Path, default=servers.REPO / ".bench" / "screenshots",
                        help="server logs, recordings and screenshots.json (default: .bench/screenshots)")
    parser.add_argument("--no-doc", action="store_true",
                        help=f"store nothing: leave {RESULT.relative_to(servers.REPO)} and docs/benchmarks.md alone")
    args = parser.parse_args()
    if args.render:
        if not RESULT.exists():
            sys.exit(f"no stored result at {RESULT}: run {COMMAND} first")
        text = section(json.loads(RESULT.read_text()))
        print(text)
        if not args.no_doc:
            write_section(SECTION_TITLE, text, DOC)
        return
    sys.exit(run(args.quick, args.workdir.resolve(), store=not (args.quick or args.no_doc)))


if __name__ == "__main__":
    main()
