"""The measurements: the interleaved latency/throughput matrix, the long memory run,
and the check that the proxy recorded every call it answered."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Callable

import psutil
from pydantic import BaseModel

from benchmarks.proxy.loadgen import LoadResult, run_loadgen
from benchmarks.proxy.screenshots import ScreenshotPlan
from benchmarks.proxy.stats import OURS, MemoryFigures, RecordingCheck


class Plan(BaseModel):
    """How many calls each measurement makes; see bench_proxy.py for the two presets."""

    rounds: int
    calls: dict[int, int]  # clients -> measured calls per round
    warmup: dict[int, int]  # clients -> warm-up calls before each measurement
    memory_calls: int
    memory_clients: int = 64
    progress_every: int
    cell_time_limit_s: float
    memory_time_limit_s: float
    streams: tuple[bool, ...] = (False, True)  # which of plain / streamed calls the matrix measures


class CellRun(BaseModel):
    """One measurement: a variant at one (streaming, clients) in one round."""

    variant: str
    stream: bool
    clients: int
    round: int
    result: LoadResult
    server_cpu_s: float  # CPU time of the server in front (warm-up included): the proxy, or the upstream when direct


def _tree_cpu_s(pid: int) -> float:
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def run_matrix(
    plan: Plan, targets: dict[str, tuple[str, int]], log: Callable[[str], None], screenshots: ScreenshotPlan | None = None
) -> list[CellRun]:
    """Measure every variant at every (streaming, clients), variants interleaved.

    Each round visits every cell and runs the variants back to back, in an order that
    rotates from round to round, so that noise from the shared machine falls on all
    variants alike rather than on whichever ran last. With ``screenshots`` every call
    carries one; each cell gets screenshots of its own (seeded by the cell), the same for
    every variant, so no proxy finds a cell's images already stored.
    """
    variants = list(targets)
    runs: list[CellRun] = []
    for rnd in range(plan.rounds):
        order = variants[rnd % len(variants):] + variants[: rnd % len(variants)]
        for stream, clients in itertools.product(plan.streams, sorted(plan.calls)):
            for variant in order:
                base, pid = targets[variant]
                prefix = f"r{rnd}-{'s' if stream else 'n'}-c{clients}"
                cpu_before = _tree_cpu_s(pid)
                result = run_loadgen(
                    base, clients, plan.calls[clients], "on" if stream else "off", plan.warmup[clients],
                    session_paths=variant == OURS, session_prefix=prefix, time_limit_s=plan.cell_time_limit_s,
                    screenshots=screenshots.model_copy(update={"seed": prefix}) if screenshots else None,
                )
                cpu_s = _tree_cpu_s(pid) - cpu_before
                log(f"round {rnd + 1}/{plan.rounds} {variant:>9} {'stream' if stream else 'plain':>6} "
                    f"c={clients:<3} {result.ok}/{result.calls} ok, {result.ok / result.wall_s:,.0f} req/s, "
                    f"server CPU {cpu_s / max(result.answered, 1) * 1000:.2f} ms/call"
                    + (f", errors: {result.errors[:2]}" if result.failed else ""))
                runs.append(CellRun(variant=variant, stream=stream, clients=clients, round=rnd, result=result,
                                    server_cpu_s=cpu_s))
    return runs


def _tree_rss_mib(pid: int) -> float:
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += proc.memory_info().rss
    return total / 2**20


def run_memory(plan: Plan, base: str, proxy_pid: int, log: Callable[[str], None]) -> tuple[MemoryFigures, int]:
    """Send ``plan.memory_calls`` calls (streamed and not, alternating) through the proxy,
    sampling its resident memory every ``plan.progress_every`` calls.

    Returns the figures and how many calls the proxy answered (for the recording check).
    """
    idle = _tree_rss_mib(proxy_pid)
    samples: list[tuple[int, float]] = []

    def sample(done: int) -> None:
        samples.append((done, _tree_rss_mib(proxy_pid)))
        if done % (plan.progress_every * 10) == 0:
            log(f"memory run: {done:,} calls, proxy RSS {samples[-1][1]:.1f} MiB")

    result = run_loadgen(
        base, plan.memory_clients, plan.memory_calls, "mixed", plan.warmup[plan.memory_clients], session_paths=True,
        session_prefix="mem", time_limit_s=plan.memory_time_limit_s, progress_every=plan.progress_every,
        on_progress=sample,
    )
    # Progress lines cover warm-up and measured phases alike; keep the measured ones,
    # which come after the last reset of the counter.
    measured = _after_last_reset(samples)
    if result.failed:
        log(f"memory run: {result.failed} failed calls, e.g. {result.errors[:2]}")
    figures = MemoryFigures(calls=result.calls, ok=result.ok, wall_s=result.wall_s, idle_mib=idle, samples=measured)
    return figures, result.answered


def _after_last_reset(samples: list[tuple[int, float]]) -> list[tuple[int, float]]:
    start = 0
    for i in range(1, len(samples)):
        if samples[i][0] < samples[i - 1][0]:
            start = i
    return samples[start:]


def check_recording(outputs: list[tuple[Path, int]], validate: bool) -> RecordingCheck:
    """Count the lines the proxy wrote in each output directory against the calls it
    answered there; with ``validate``, read every file back through the trajectory
    reader, which checks each record and the call order."""
    files = sorted(path for out_dir, _ in outputs for path in out_dir.glob("*.jsonl"))
    lines = 0
    for path in files:
        with path.open("rb") as fh:
            lines += sum(1 for _ in fh)
    invalid: list[str] = []
    if validate:
        from components.core.trajectory import TrajectoryError, read_session

        for path in files:
            try:
                calls = read_session(path)
            except TrajectoryError as exc:
                invalid.append(str(exc))
                continue
            bad = [c for c in calls if not c.ok]
            if bad:
                invalid.append(f"{path.name}: call {bad[0].call_index} not ok (error: {bad[0].error})")
            if len(invalid) >= 5:
                break
    return RecordingCheck(answered=sum(n for _, n in outputs), lines=lines, sessions=len(files), invalid=invalid)
