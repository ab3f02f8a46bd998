"""The engine benchmark's figures: the terminal table and the docs/benchmarks.md section.

Both take results already pooled over the rounds; the section also takes the stored
result (``benchmarks/results/engine.json``) for its stamp and each round's figures, and
reads nothing else, so the doc can be re-rendered from that file and compared.
"""

from __future__ import annotations

import statistics
from typing import Any

STORE = "prefix-cache store"
ONE_ENTRY = "store of one entry"
BEFORE = "before"


def _hit_rate(cache: dict[str, Any] | None) -> str:
    if cache is None:
        return "-"
    requests = cache["hits"] + cache["misses"]
    tokens = cache["reused_tokens"] + cache["prefilled_tokens"]
    return f"{cache['hits']}/{requests} calls, {cache['reused_tokens'] / tokens:.0%} of tokens" if requests else "-"


def _variant(results: list[Any], name: str) -> Any:
    return next((r for r in results if r.variant == name or r.variant.startswith(name + " (")), None)


def rows(results: list[Any]) -> list[list[str]]:
    """One row per variant; the ratios divide by the store's figure of the same run."""
    store = _variant(results, STORE)
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


def _reading(raw: dict[str, Any], plan: Any, results: list[Any]) -> str:
    """What the table says, every figure taken from this run."""
    store, one, before = (_variant(results, name) for name in (STORE, ONE_ENTRY, BEFORE))
    prompts = [c["prompt_tokens"] for c in store.calls]
    text = "Reading it: "
    if before is not None:
        k = store.cold_prompt_tokens
        text += (
            "the cold call is the case behind the slow Claude Code calls. The engine before reused any common "
            f"prefix with the previous request, so a {k // 1000}k-token prompt sharing only the chat header "
            "(`<|im_start|>system\\n`) was prefilled as one forward pass after a 3-token cache, with an explicit "
            f"{k // 1000}k x {k // 1000}k float mask ({k * k * 4 / 1e9:.0f} GB) instead of SDPA's causal kernel: "
            f"{before.cold_s:.1f} s here, {before.cold_s / store.cold_s:.1f} times the store's, before any queueing "
            f"behind {plan.sessions - 1} other sessions. Now a"
        )
    else:
        text += "A"
    text += (
        " prefix is reused only when the new suffix is under a quarter of the prompt, uncached suffixes after "
        "cached tokens run in 1,024-token chunks, and decode steps run on one thread (two threads waiting on each "
        "other on a shared 2-core machine slow every decoded token at long context); the measurements behind these "
        "choices are in the comments of `components/engine/_kv_cache.py` and `components/engine/_generation.py`. "
    )
    iterations = {r.variant: [run["iteration_s"] for run in raw["runs"] if run["variant"] == r.variant]
                  for r in results}  # fmt: skip
    spread = max(max(times) / min(times) - 1 for times in iterations.values())
    ratio = one.iteration_s / store.iteration_s
    level = abs(ratio - 1) <= spread
    recomputed_store = store.cache_iteration["prefilled_tokens"]
    recomputed_one = one.cache_iteration["prefilled_tokens"]
    more = recomputed_one / recomputed_store - 1
    recomputed = (
        f"recomputes {abs(more):.0%} {'more' if more >= 0 else 'fewer'} prompt tokens than the store "
        f"({recomputed_one:,} against {recomputed_store:,} over the iteration)"
    )
    if level:
        text += (
            f"With this traffic the store and the store of one entry are level (the one entry's iteration takes "
            f"{ratio:.2f} times the store's, within the rounds' own spread): the sessions' own parts are short next "
            f"to the shared {plan.prefix_tokens:,}-token prefix, so one entry (a copy of the prefix plus the "
            f"session's own ~{min(prompts) - plan.prefix_tokens:,}-{max(prompts) - plan.prefix_tokens:,} tokens) "
            f"{recomputed} and each call's time is mostly its {plan.max_tokens} decoded tokens and its wait in the "
            "queue. "
        )
    else:
        text += (
            f"With this traffic the store of one entry takes {ratio:.2f} times the store's iteration, more than the "
            f"rounds' own spread; it {recomputed}. "
        )
    text += (
        f"The store keeps {store.cache_iteration['entries']} conversations in "
        f"{store.cache_iteration['bytes'] / 2**20:.0f} MiB here; its advantage grows with each session's own "
        "history (a one-entry engine recomputes the whole of it on every call once another session has run in "
        "between)."
    )
    if plan.rounds > 1:
        moves = [f"{name} {' then '.join(f'{t:.1f}' for t in times)} s" for name, times in iterations.items()]
        text += (
            f" The iteration round by round: {'; '.join(moves)}. Differences under ~{spread:.0%} between variants "
            "are noise on this machine."
        )
    return text


def section(raw: dict[str, Any], plan: Any, results: list[Any]) -> str:
    store = _variant(results, STORE)
    prompts = [c["prompt_tokens"] for c in store.calls]
    firsts = [c["prompt_tokens"] for c in store.calls if c["turn"] == 0]
    lines = [
        "## Dev engine: prefix cache",
        "",
        f"Command: `{raw['command']}` (the `bench-engine` make target). Date: {raw['date']}. Machine: "
        f"{raw['machine']}; load average {raw['load']} (other work shares the cores: the higher, the noisier the "
        f"figures). Commit: {raw['commit']}. Rendered from `benchmarks/results/engine.json`.",
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
        "",
        _reading(raw, plan, results),
    ]
    return "\n".join(lines) + "\n"
