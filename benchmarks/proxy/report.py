"""Present the proxy benchmark's figures: the rich table for the terminal, and the table
rows, memory line and verdict marks that bench_proxy.py's doc section shares with it."""

from __future__ import annotations

from benchmarks.proxy.stats import VARIANT_LABELS, MemoryFigures, RecordingCheck, Row, Verdict


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else f"{value:{spec}}"


def table_rows(rows: list[Row]) -> list[list[str]]:
    """Rows as display strings, in the order: streaming, clients, path."""
    out = []
    for r in rows:
        c = r.cell
        out.append([
            "yes" if c.stream else "no", str(c.clients), VARIANT_LABELS[c.variant], f"{c.ok:,}",
            f"{c.p50_ms:.3f}", f"{c.p99_ms:.3f}", f"{r.added_p50_ms:+.3f}", f"{r.added_p99_ms:+.3f}",
            f"{r.p50_ratio:.2f}x", _fmt(c.first_chunk_p50_ms, ".3f"), _fmt(r.added_first_chunk_ms, "+.3f"),
            f"{c.rps:,.0f}", f"{r.rps_ratio:.2f}x", f"{c.server_cpu_ms_per_call:.2f}",
        ])
    return out


HEADERS = ["stream", "clients", "path", "calls ok", "p50 ms", "p99 ms", "+p50 ms", "+p99 ms", "p50 x direct",
           "1st chunk p50 ms", "+1st chunk ms", "req/s", "req/s x direct", "server CPU ms/call"]


def verdict_mark(v: Verdict) -> str:
    return {True: "PASS", False: "FAIL", None: "NOT MEASURED"}[v.passed]


def print_report(rows: list[Row], memory: MemoryFigures | None, recording: RecordingCheck | None,
                 verdicts: list[Verdict]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 150))  # the table is wide; wrap rather than squeeze it
    table = Table(title="Proxy overhead against a fast upstream (ratios to direct calls, same run)")
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "path" else "right")
    for cells in table_rows(rows):
        table.add_row(*cells)
    console.print(table)
    if memory:
        console.print(memory_line(memory))
    if recording:
        console.print(f"Recording: {recording.summary}")
    for v in verdicts:
        colour = {True: "green", False: "red", None: "yellow"}[v.passed]
        console.print(f"[{colour}]{verdict_mark(v)}[/{colour}] {v.target}: {v.measured}")


def memory_line(m: MemoryFigures) -> str:
    return (f"Proxy RSS over {m.calls:,} calls ({m.ok:,} ok, {m.ok / m.wall_s:,.0f} req/s, 64 clients, streamed and "
            f"not alternating): idle {m.idle_mib:.1f} MiB, after {m.samples[0][0]:,} calls {m.start_mib:.1f} MiB, "
            f"end {m.end_mib:.1f} MiB, peak {m.peak_mib:.1f} MiB, fitted slope after the first tenth "
            f"{m.growth_mib_per_100k:+.2f} MiB per 100k calls")
