"""Present the proxy benchmark: a rich table for the terminal and the "Recording proxy"
section of docs/benchmarks.md (replaced in place, the rest of the file kept)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from benchmarks.doc_sections import write_section
from benchmarks.proxy.stats import VARIANT_LABELS, MemoryFigures, RecordingCheck, Row, Verdict

SECTION_TITLE = "Recording proxy"


class RunInfo(BaseModel):
    """Where and how the figures were made."""

    command: str
    date: str
    machine: str
    load: str  # the machine's 1-minute load average around the run: how much other work shared it
    priority: str  # the CPU priority the run's processes had
    litellm: str  # version, or why it was not measured
    plan: str


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


def _verdict_mark(v: Verdict) -> str:
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
        console.print(_memory_line(memory))
    if recording:
        console.print(f"Recording: {recording.summary}")
    for v in verdicts:
        colour = {True: "green", False: "red", None: "yellow"}[v.passed]
        console.print(f"[{colour}]{_verdict_mark(v)}[/{colour}] {v.target}: {v.measured}")


def _memory_line(m: MemoryFigures) -> str:
    return (f"Proxy RSS over {m.calls:,} calls ({m.ok:,} ok, {m.ok / m.wall_s:,.0f} req/s, 64 clients, streamed and "
            f"not alternating): idle {m.idle_mib:.1f} MiB, after {m.samples[0][0]:,} calls {m.start_mib:.1f} MiB, "
            f"end {m.end_mib:.1f} MiB, peak {m.peak_mib:.1f} MiB, fitted slope after the first tenth "
            f"{m.growth_mib_per_100k:+.2f} MiB per 100k calls")


def section_markdown(info: RunInfo, rows: list[Row], memory: MemoryFigures | None,
                     recording: RecordingCheck | None, verdicts: list[Verdict]) -> str:
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"Command: `{info.command}` (the `bench-proxy` make target). Date: {info.date}. "
        f"Machine: {info.machine}; load average {info.load} (other work shares the cores: the higher, "
        f"the noisier the figures); {info.priority}.",
        "",
        "What runs, all on 127.0.0.1 in separate processes: a fast upstream that answers at once "
        "with vLLM's shape (`benchmarks/proxy/fast_upstream.py`: 128 prompt token ids, 8 completion "
        "tokens with logprobs; streamed as a role chunk, 8 token chunks, a finish chunk, a usage chunk "
        "and `[DONE]`); the load generator (`benchmarks/proxy/loadgen.py`, aiohttp, one keep-alive "
        "connection per client, warm-up before each measurement); and in front of the upstream either "
        "nothing (direct), the OpenForge recording proxy (one process, recording every call to "
        "`<session>.jsonl`, one session per client), or LiteLLM's proxy "
        f"({info.litellm}; one uvicorn worker like ours, no database, no callbacks, spend and error "
        "logs off, no master key check, access log off, local cost map, outbound traffic blocked). "
        f"{info.plan} Variants run back to back for each cell, in an order that rotates per round, "
        "so the machine's noise falls on all of them; figures pool the rounds.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" if h == "path" else "---:" for h in HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(rows)]
    lines.append("")
    lines.append("*+* = this path's figure minus the direct path's (added by the proxy); *x direct* = this "
                 "path's figure divided by the direct path's; *1st chunk* = request sent to the first body bytes "
                 "of a streamed answer; *server CPU* = CPU time of the process in front of the client per call (the "
                 "proxy's own, or the upstream's on the direct path), the figure least moved by the machine's noise.")
    lines.append("")
    if memory:
        lines += [_memory_line(memory) + ".", ""]
    if recording:
        lines += [f"Recording check: {recording.summary}.", ""]
    lines.append("Targets:")
    lines.append("")
    lines += [f"- **{_verdict_mark(v)}** {v.target}: {v.measured}" for v in verdicts]
    return "\n".join(lines) + "\n"


def write_doc(path: Path, section: str) -> None:
    """Replace this benchmark's section of the shared doc, keeping every other section."""
    write_section(SECTION_TITLE, section, path)
