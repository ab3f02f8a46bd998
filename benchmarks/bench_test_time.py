"""The README's test command timed as CI runs it: `.ci/run` in a fresh clone of HEAD, with
``../shared`` beside it when this checkout has one, and the package caches off.

    .venv/bin/python benchmarks/bench_test_time.py            # clone, run, store, write the doc section
    .venv/bin/python benchmarks/bench_test_time.py --render   # the doc section from the stored result

The target is at most 40 minutes for the whole command on this 2-core machine. With the
caches off (uv, pip and npm: ``fresh``) every Python and npm package is downloaded again,
as on CI's new machine; what `make test` puts outside the clone (Debian packages, the
podman image) is not made again where this machine already has it.
Two figures come apart: the whole command (clone to exit) and pytest's own time, the rest
being the installs pytest waits for. The files whose tests took longest come from pytest's
``--durations`` (set-up, call and tear-down, summed per file; two workers share them, so the
sum is about twice pytest's time). The result is stored in ``benchmarks/results/`` and the
doc section rendered from it alone, so it can be checked against ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import REPO, machine_summary, now_text, write_section  # noqa: E402

COMMAND = ".venv/bin/python benchmarks/bench_test_time.py"
TITLE = "Test time: `make test` on a clean clone"
RESULT = REPO / "benchmarks" / "results" / "test-time.json"
LOGS = REPO / ".bench" / "test-time"
TARGET_S = 40 * 60
SLOWEST_FILES = 12
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown) +(\S+)")


def pytest_summary(log: str) -> tuple[dict[str, int], float | None]:
    """The counts (passed, failed, ...) and seconds of pytest's last summary line in ``log``;
    ({}, None) when pytest never got that far (an install failed)."""
    lines = [line for line in log.splitlines() if line.startswith("=") and " in " in line and _COUNT.search(line)]
    if not lines:
        return {}, None
    last = lines[-1]
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _COUNT.findall(last)}
    seconds = re.search(r" in ([\d.]+)s", last)
    return counts, float(seconds.group(1)) if seconds else None


def seconds_by_file(log: str) -> dict[str, float]:
    """pytest's ``--durations`` lines summed per test file, longest first."""
    totals: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        match = _DURATION.match(line)
        if match:
            totals[match.group(3).split("::", 1)[0]] += float(match.group(1))
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def measure(fresh: bool) -> dict:
    """Clone HEAD, run `.ci/run` there, and return what it took."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    commit = head.stdout.strip()
    LOGS.mkdir(parents=True, exist_ok=True)
    log_path = LOGS / f"{commit}.log"
    with tempfile.TemporaryDirectory(prefix="openforge-test-time-") as scratch:
        root = Path(scratch)
        if (REPO.parent / "shared").is_dir():
            (root / "shared").symlink_to(REPO.parent / "shared")
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(root / "main")], check=True)
        env = {**os.environ, "PYTEST_ARGS": "--durations=0 --durations-min=0.5"}
        if fresh:
            env |= {"UV_NO_CACHE": "1", "PIP_NO_CACHE_DIR": "1", "npm_config_cache": str(root / "npm-cache")}
        date, load_before, started = now_text(), os.getloadavg(), time.monotonic()
        print(f"[test-time] .ci/run in a clone of {commit}; log: {log_path}", flush=True)
        with open(log_path, "w") as log:
            run = subprocess.run(["bash", ".ci/run"], cwd=root / "main", env=env, stdout=log, stderr=subprocess.STDOUT)
        code = run.returncode
        wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = log_path.read_text(errors="replace")
    counts, pytest_s = pytest_summary(text)
    return {
        "commit": commit, "date": date, "machine": machine_summary(), "fresh": fresh, "exit_code": code,
        "wall_s": round(wall, 1), "pytest_s": pytest_s, "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "load_before": list(load_before), "load_after": list(os.getloadavg()), "counts": counts,
        "slowest_files": {name: round(s, 1) for name, s in list(seconds_by_file(text).items())[:SLOWEST_FILES]},
    }  # fmt: skip


def render(result: dict) -> str:
    """The doc section, from a stored result alone."""
    minutes = lambda seconds: f"{seconds / 60:.1f} min"  # noqa: E731
    load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
    counts = ", ".join(f"{n} {kind}" for kind, n in result["counts"].items()) or "pytest did not finish"
    met = result["exit_code"] == 0 and result["wall_s"] <= TARGET_S
    failed = f"the run failed (exit {result['exit_code']})"
    verdict = "met" if met else ("missed" if result["exit_code"] == 0 else failed)
    pytest_s = result["pytest_s"]
    rows = [
        f"| the whole command, clone to exit | {minutes(result['wall_s'])} |",
        f"| pytest's own time | {minutes(pytest_s) if pytest_s else '-'} |",
        f"| installs and set-up before pytest | {minutes(result['wall_s'] - pytest_s) if pytest_s else '-'} |",
        f"| CPU time, user and system, of the processes it waited for (not the background installs) | "
        f"{minutes(result['cpu_s'])} |",
        f"| tests | {counts} |",
        f"| target: at most {TARGET_S // 60} min for the whole command | {verdict} |",
    ]
    caches = ("off: every Python and npm package downloaded again; Debian packages and the podman image this machine "
              "already had were not made again") if result["fresh"] else "on"
    files = [f"| `{name}` | {seconds:.0f} |" for name, seconds in result["slowest_files"].items()]
    return "\n".join([
        f"## {TITLE}", "",
        f"Command: `{COMMAND}`. Date: {result['date']}. Commit: {result['commit']}. Machine: {result['machine']}; "
        f"load average (1, 5, 15 min) {load(result['load_before'])} before, {load(result['load_after'])} after. "
        f"Package caches: {caches}.", "",
        "`.ci/run` in a fresh clone, with `CI=true` (a missing install fails the run, never skips a test).", "",
        "| | |", "|---|---:|", *rows, "",
        f"The {len(files)} test files that took longest, in seconds (set-up, call and tear-down summed; the two "
        "workers run them side by side):", "",
        "| file | s |", "|---|---:|", *files, "",
    ])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", action="store_true", help="write the doc section from the stored result only")
    parser.add_argument("--cached", action="store_true", help="keep the package caches (faster; not what CI sees)")
    parser.add_argument("--no-doc", action="store_true", help="store the result but leave docs/benchmarks.md alone")
    args = parser.parse_args()
    if args.render:
        if not RESULT.exists():
            raise SystemExit(f"no stored result at {RESULT}: run {COMMAND} first")
        result = json.loads(RESULT.read_text())
    else:
        result = measure(fresh=not args.cached)
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(result, indent=1) + "\n")
    section = render(result)
    print(section)
    if not args.no_doc:
        write_section(TITLE, section)
    return 0 if result["exit_code"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
