"""The engine benchmark's figures: the terminal table and the docs/benchmarks.md section."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

STORE = "prefix-cache store"
ONE_ENTRY = "store of one entry"
BEFORE = "before"


@dataclass(frozen=True)
class RunInfo:
    command: str
    date: str
    machine: str
    load: str
    commit: str


def _hit_rate(cache: dict[str, Any] | None) -> str:
    if cache is None:
        return "-"
    requests = cache["hits"] + cache["misses"]
    tokens = cache["reused_tokens"] + cache["prefilled_tokens"]
    return f"{cache['hits']}/{requests} calls, {cache['reused_tokens'] / tokens:.0%} of tokens" if requests else "-"


def rows(results: list[Any]) -> list[list[str]]:
    """One row per variant; the ratios divide by the store's figure of the same run."""
    store = next(r for r in results if r.variant == STORE)
    out = []
    for r in results:
        latencies = [c["latency_s"] for c in r.calls]
        out.append([
            r.variant,
            f"{r.cold_s:.2f}", f"{r.cold_s / store.cold_s:.2f}",
            f"{r.warm_s:.2f}", f"{r.warm_s / store.warm_s:.2f}",
            f"{r.iteration_s:.1f}", f"{r.iteration_s / store.iteration_s:.2f}",
            f"{statistics.median(latencies):.2f}", f"{max(latencies):.2f}",
            _hit_rate(r.cache_iteration),
        ])  # fmt: skip
    return out


HEADER = ["engine", "cold call s", "x store", "warm call s", "x store", "iteration s", "x store",
          "call p50 s", "call max s", "cache hits in the iteration"]  # fmt: skip


def table(results: list[Any]) -> str:
    lines = [HEADER, *rows(results)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)


def section(info: RunInfo, plan: Any, results: list[Any]) -> str:
    store = next(r for r in results if r.variant == STORE)
    prompts = [c["prompt_tokens"] for c in store.calls]
    firsts = [c["prompt_tokens"] for c in store.calls if c["turn"] == 0]
    lines = [
        "## Dev engine: prefix cache",
        "",
        f"Command: `{info.command}` (the `bench-engine` make target). Date: {info.date}. Machine: {info.machine}; "
        f"load average {info.load} (other work shares the cores: the higher, the noisier the figures). "
        f"Commit: {info.commit}.",
        "",
        f"What a rollout of agent harnesses sends the dev engine (tiny model, default `--threads 2`), through its "
        f"HTTP API on loopback: {plan.sessions} sessions at once, {plan.turns} turns each, whose first prompts "
        f"share a {plan.prefix_tokens:,}-token system prompt and tool schemas and add a task of their own "
        f"({min(firsts):,}-{max(firsts):,} tokens in all); each turn resends the history with the answer "
        f"(`max_tokens` {plan.max_tokens}) and a tool result appended (prompts up to {max(prompts):,} tokens). "
        f"*Iteration* is the wall time of those {plan.sessions * plan.turns} calls. Then, alone, a *cold call* "
        f"({store.cold_prompt_tokens:,} tokens sharing nothing with what is cached: another harness's system "
        f"prompt) and its *warm* continuation ({store.warm_prompt_tokens:,} tokens). Each engine runs fresh, one "
        f"after the other, in {plan.rounds} round{'s' if plan.rounds > 1 else ''} (the order reversed every other "
        "round); times are means over the rounds, *call p50/max* over all their calls (in the iteration a call "
        "mostly waits for the others: the engine answers one at a time); *x store* divides by the store's figure.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|---|" + "---:|" * (len(HEADER) - 2) + "---|",
        *("| " + " | ".join(row) + " |" for row in rows(results)),
        "",
        f"*{STORE}*: the engine at this commit (`--kv-cache-mib 512`, up to 64 conversations); "
        f"*{ONE_ENTRY}*: the same with `--kv-cache-entries 1`, the previous request's cache only, as the engine "
        f"kept it before; *{BEFORE}*: the engine's code at that commit (one cache, `DynamicCache`, the whole "
        "uncached suffix in one masked forward pass, both threads for every step). *cache hits*: calls that "
        "started from cached tokens, and the share of prompt tokens not recomputed.",
    ]
    return "\n".join(lines) + "\n"
