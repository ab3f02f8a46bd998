"""The trajectory viewer on a 1,000-rollout iteration: how long its page takes to open.

    .venv/bin/python benchmarks/bench_viewer.py            # 125 tasks x 8 samples: stores its result, rewrites its doc section
    .venv/bin/python benchmarks/bench_viewer.py --render   # the doc section from the stored result only
    .venv/bin/python benchmarks/bench_viewer.py --quick    # 40 tasks x 2: neither stores nor touches the doc

Synthesizes a scored iteration in a local store (benchmarks/viewer/synth.py: the plan,
each rollout's outcome and recorded calls, then the real score step), starts
``openforge view`` on it as its own process and times the iteration page over HTTP:
cold (the first open in a freshly started viewer, several starts) and warm (repeated
opens on one viewer), then a later page of tasks and one rollout's page. Target: the
iteration opens in under a second. A full run stores its raw figures in
``benchmarks/results/viewer.json`` and renders the doc section from that file alone;
every run also leaves them in <workdir>/viewer.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from benchmarks.doc_sections import DOC, REPO, Stamp, stamped, write_section
from benchmarks.viewer.synth import synth_config, synthesize_iteration
from components.core.services import free_port, openforge_argv, start_service
from components.core.storage import RunLayout, open_store
from components.viewer.links import iteration_path, rollout_path

SECTION = "Trajectory viewer: a 1,000-rollout iteration"
RESULT = REPO / "benchmarks" / "results" / "viewer.json"  # the section is rendered from it alone
NAME = "viewer-bench"
TARGET_S = 1.0


@dataclass(frozen=True)
class Plan:
    tasks: int
    samples: int
    cold_starts: int
    warm_opens: int


FULL = Plan(tasks=125, samples=8, cold_starts=5, warm_opens=30)
QUICK = Plan(tasks=40, samples=2, cold_starts=2, warm_opens=5)


@dataclass(frozen=True)
class Results:
    rollouts: int
    store_files: int
    page_kib: float
    read_kib: float  # plan.json + rewards.json + metrics.json: what the page reads
    cold_s: list[float]
    warm_s: list[float]
    later_page_s: float
    rollout_page_s: float


@dataclass(frozen=True)
class ViewerRun(Stamp):
    plan: Plan
    results: Results


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _timed_get(client: httpx.Client, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed, len(response.content)


def measure(plan: Plan, work: Path) -> Results:
    store_dir = work / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    uri = f"file://{store_dir}"
    store = open_store(uri)
    _log(f"synthesizing {plan.tasks} tasks x {plan.samples} samples in {store_dir}")
    ids = synthesize_iteration(store, synth_config(NAME, plan.samples), tasks=plan.tasks)
    layout = RunLayout(NAME)
    read = sum(len(store.get_bytes(key)) for key in (layout.plan(0), layout.rewards(0), layout.metrics(0)))
    files = sum(1 for p in store_dir.rglob("*") if p.is_file())
    cold, warm, size = [], [], 0
    later = rollout = 0.0
    # One client for every open: a new one builds an SSL context each time (tens of ms), which
    # is the client's cost, not the viewer's.
    client = httpx.Client(timeout=60)
    for start in range(plan.cold_starts):
        port = free_port()
        argv = openforge_argv("view", uri, "--port", str(port))
        with start_service("viewer", argv, port=port, log_dir=work / "logs", health_path="/", env={"PYTHONPATH": str(REPO)}) as viewer:
            elapsed, size = _timed_get(client, viewer.url + iteration_path(NAME, 0))
            cold.append(elapsed)
            _log(f"cold open {start + 1}/{plan.cold_starts}: {elapsed * 1000:.0f} ms")
            if start == plan.cold_starts - 1:
                warm = [_timed_get(client, viewer.url + iteration_path(NAME, 0))[0] for _ in range(plan.warm_opens)]
                later = _timed_get(client, viewer.url + iteration_path(NAME, 0) + "?page=2")[0]
                rollout = _timed_get(client, viewer.url + rollout_path(NAME, 0, ids[len(ids) // 2]))[0]
    client.close()
    return Results(len(ids), files, size / 1024, read / 1024, cold, warm, later, rollout)


def met(raw: dict) -> bool:
    return max(raw["results"]["cold_s"]) < TARGET_S


def section(raw: dict) -> str:
    """The doc section, from a stored result (``RESULT``) alone."""
    stamp = Stamp(**{field.name: raw[field.name] for field in dataclasses.fields(Stamp)})
    plan, results = raw["plan"], raw["results"]
    cold, warm = results["cold_s"], sorted(results["warm_s"])
    p95 = warm[min(len(warm) - 1, int(0.95 * len(warm)))]
    return f"""## {SECTION}

{stamp.stamp_line()} Rendered from `{RESULT.relative_to(REPO)}`.

A scored iteration of {results["rollouts"]:,} rollouts ({plan["tasks"]} tasks x {plan["samples"]} samples, three
recorded calls each; {results["store_files"]:,} files in the store) synthesized with the repo's own
writers and the real score step (benchmarks/viewer/synth.py), served by `openforge view` as
its own process and opened over HTTP. The page reads three files ({results["read_kib"]:.0f} KiB: plan,
rewards, metrics), never a trajectory, and renders one page of tasks ({results["page_kib"]:.0f} KiB of HTML).

| open | time |
|---|---:|
| iteration page, cold (first open in a fresh viewer; median of {len(cold)} starts, max) | {statistics.median(cold) * 1000:.0f} ms, {max(cold) * 1000:.0f} ms |
| iteration page, warm (median of {len(warm)}, p95) | {statistics.median(warm) * 1000:.0f} ms, {p95 * 1000:.0f} ms |
| page 2 of its tasks, warm | {results["later_page_s"] * 1000:.0f} ms |
| one rollout's page (its calls and conversation) | {results["rollout_page_s"] * 1000:.0f} ms |

Target: under {TARGET_S:.0f} s cold; this run {"meets" if met(raw) else "misses"} it.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="40 tasks x 2 samples, 2 starts; stores nothing, leaves the doc as it is")
    modes.add_argument("--render", action="store_true", help=f"write the doc section from {RESULT.relative_to(REPO)} only")
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "viewer", help="store, logs, viewer.json")
    args = parser.parse_args()
    if args.render:
        if not RESULT.exists():
            sys.exit(f"no stored result at {RESULT}: run a full benchmark first")
        raw = json.loads(RESULT.read_text())
    else:
        plan = QUICK if args.quick else FULL
        args.workdir.mkdir(parents=True, exist_ok=True)
        command = " ".join([".venv/bin/python", "benchmarks/bench_viewer.py", *sys.argv[1:]])
        raw = asdict(stamped(ViewerRun, command, lambda: (plan, measure(plan, args.workdir))))
        (args.workdir / "viewer.json").write_text(json.dumps(raw, indent=1) + "\n")
        if not args.quick:  # stored even when the target is missed: a miss is a figure too
            RESULT.parent.mkdir(parents=True, exist_ok=True)
            RESULT.write_text(json.dumps(raw, indent=1) + "\n")
    text = section(raw)
    print(text)
    if not args.quick:
        write_section(SECTION, text, DOC)
        _log(f"wrote the '{SECTION}' section of {DOC} from {RESULT}")
    if not met(raw):
        sys.exit(f"the iteration page took {max(raw['results']['cold_s']):.2f} s cold: over the {TARGET_S:.0f} s target")


if __name__ == "__main__":
    main()
