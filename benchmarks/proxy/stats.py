"""Turn raw load results into per-cell figures, ratios to the direct path, and verdicts."""

from __future__ import annotations

from pydantic import BaseModel

from benchmarks.proxy.loadgen import LoadResult

DIRECT, OURS, LITELLM = "direct", "openforge", "litellm"
VARIANT_LABELS = {DIRECT: "direct", OURS: "OpenForge proxy", LITELLM: "LiteLLM proxy"}

# The targets the proxy is held to. The memory limit is a fitted slope, not a
# difference of two samples: it separates a leak (a few bytes per call adds up to tens
# of MiB) from the allocator's ups and downs.
ADDED_P50_LIMIT_MS = 1.0
THROUGHPUT_FACTOR = 2.0
GROWTH_LIMIT_MIB_PER_100K = 4.0
MIN_CALLS_TO_JUDGE_GROWTH = 50_000  # a shorter run's slope, scaled to 100k calls, is mostly noise


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered) + 0.5 - 1e-9))
    return ordered[min(rank, len(ordered)) - 1]


class Cell(BaseModel):
    """One (variant, streaming, clients) cell, pooled over its rounds."""

    variant: str
    stream: bool
    clients: int
    calls: int
    ok: int
    failed: int
    errors: list[str]
    p50_ms: float
    p99_ms: float
    first_chunk_p50_ms: float | None
    rps: float
    server_cpu_ms_per_call: float  # the proxy's own CPU, or the upstream's on the direct path
    request_bytes_per_s: float = 0.0  # request bodies of the calls answered 200, per second of the runs


def pool(variant: str, stream: bool, clients: int, runs: list[LoadResult], server_cpu_s: float) -> Cell:
    """Pool one cell's rounds; ``server_cpu_s`` is the server's CPU over all of them."""
    latencies = [x for r in runs for x in r.latency_ms]
    first = [x for r in runs for x in r.first_chunk_ms]
    ok = sum(r.ok for r in runs)
    wall = sum(r.wall_s for r in runs)
    return Cell(
        variant=variant, stream=stream, clients=clients, calls=sum(r.calls for r in runs), ok=ok,
        failed=sum(r.failed for r in runs), errors=[e for r in runs for e in r.errors][:5],
        p50_ms=percentile(latencies, 50) if latencies else float("nan"),
        p99_ms=percentile(latencies, 99) if latencies else float("nan"),
        first_chunk_p50_ms=percentile(first, 50) if first else None,
        rps=ok / wall if wall else 0.0,
        server_cpu_ms_per_call=server_cpu_s * 1000 / max(1, sum(r.answered for r in runs)),
        request_bytes_per_s=sum(r.request_bytes for r in runs) / wall if wall else 0.0,
    )


class Row(BaseModel):
    """A cell next to the direct path of the same (streaming, clients)."""

    cell: Cell
    added_p50_ms: float
    added_p99_ms: float
    added_first_chunk_ms: float | None
    p50_ratio: float
    rps_ratio: float


def rows(cells: list[Cell]) -> list[Row]:
    direct = {(c.stream, c.clients): c for c in cells if c.variant == DIRECT}
    out = []
    for c in cells:
        d = direct[(c.stream, c.clients)]
        first = None
        if c.first_chunk_p50_ms is not None and d.first_chunk_p50_ms is not None:
            first = c.first_chunk_p50_ms - d.first_chunk_p50_ms
        out.append(Row(cell=c, added_p50_ms=c.p50_ms - d.p50_ms, added_p99_ms=c.p99_ms - d.p99_ms,
                       added_first_chunk_ms=first, p50_ratio=c.p50_ms / d.p50_ms, rps_ratio=c.rps / d.rps))
    return out


def fitted_growth(samples: list[tuple[int, float]]) -> float:
    """Least-squares slope of RSS (MiB) against calls, in MiB per 100k calls."""
    if len(samples) < 2:
        return 0.0
    xs, ys = [s[0] for s in samples], [s[1] for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var * 100_000


class MemoryFigures(BaseModel):
    """Proxy RSS over a long run: samples are (calls done, RSS MiB)."""

    calls: int
    ok: int
    wall_s: float
    idle_mib: float
    samples: list[tuple[int, float]]

    @property
    def start_mib(self) -> float:
        return self.samples[0][1]

    @property
    def end_mib(self) -> float:
        return self.samples[-1][1]

    @property
    def peak_mib(self) -> float:
        return max(s[1] for s in self.samples)

    @property
    def growth_mib_per_100k(self) -> float:
        # The first tenth of the run is left out: allocator pools and caches fill there.
        steady = [s for s in self.samples if s[0] >= self.calls // 10]
        return fitted_growth(steady)


class RecordingCheck(BaseModel):
    """What the proxy wrote against what it answered, over every call sent through it."""

    answered: int
    lines: int
    sessions: int
    invalid: list[str]  # the first few problems found by reading the files back

    @property
    def ok(self) -> bool:
        return self.lines == self.answered and not self.invalid

    @property
    def summary(self) -> str:
        text = f"{self.lines:,} lines for {self.answered:,} calls in {self.sessions} session files"
        return text + (f"; invalid: {self.invalid[0]}" if self.invalid else "")


class Verdict(BaseModel):
    """One target from the issue, with what was measured; passed is None when not measured."""

    target: str
    measured: str
    passed: bool | None


def verdicts(table: list[Row], memory: MemoryFigures | None, recording: RecordingCheck | None) -> list[Verdict]:
    by_key = {(r.cell.variant, r.cell.stream, r.cell.clients): r for r in table}
    out = []
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        ours1 = by_key.get((OURS, stream, 1))
        out.append(Verdict(
            target=f"added p50 latency < {ADDED_P50_LIMIT_MS:g} ms at 1 client ({mode})",
            measured=f"{ours1.added_p50_ms:+.3f} ms" if ours1 else "not measured",
            passed=ours1.added_p50_ms < ADDED_P50_LIMIT_MS if ours1 else None,
        ))
    for stream in (False, True):
        mode = "streaming" if stream else "non-streaming"
        ours64, lite64 = by_key.get((OURS, stream, 64)), by_key.get((LITELLM, stream, 64))
        factor = ours64.cell.rps / lite64.cell.rps if ours64 and lite64 else None
        out.append(Verdict(
            target=f"throughput at 64 clients >= {THROUGHPUT_FACTOR:g}x LiteLLM ({mode})",
            measured=f"{factor:.2f}x" if factor is not None else "not measured",
            passed=factor >= THROUGHPUT_FACTOR if factor is not None else None,
        ))
    out.append(_memory_verdict(memory))
    out.append(Verdict(
        target="every call recorded (lines written == calls answered, each a valid record)",
        measured=recording.summary if recording else "not measured",
        passed=recording.ok if recording else None,
    ))
    return out


def _memory_verdict(memory: MemoryFigures | None) -> Verdict:
    if memory is None:
        return Verdict(target="no memory growth over a long run", measured="not measured", passed=None)
    measured = f"{memory.growth_mib_per_100k:+.2f} MiB per 100k calls"
    judged = memory.calls >= MIN_CALLS_TO_JUDGE_GROWTH
    return Verdict(
        target=f"no memory growth over a {memory.calls:,}-call run (fitted < {GROWTH_LIMIT_MIB_PER_100K:g} MiB per 100k calls)",
        measured=measured if judged else f"{measured} (too short a run to judge)",
        passed=memory.growth_mib_per_100k < GROWTH_LIMIT_MIB_PER_100K if judged else None,
    )
