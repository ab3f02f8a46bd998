"""Benchmark the dev engine on harness-shaped traffic: the prefix-cache store against one cache entry.

    .venv/bin/python benchmarks/bench_engine.py            # full run: stores its result, rewrites docs/benchmarks.md
    .venv/bin/python benchmarks/bench_engine.py --quick    # smoke run in a minute, nothing stored, doc untouched
    .venv/bin/python benchmarks/bench_engine.py --render   # the doc section from the stored result, no measuring

Each variant gets a fresh engine on the tiny model and, through its HTTP API on loopback:
8 concurrent sessions x 3 turns whose first prompts share a ~20k-token system prompt and
tool schemas (one iteration of a rollout), then a cold call (a 22k-token prompt that
shares nothing with what is cached) and its warm continuation (~300 more tokens). The
variants: the store (the default), the store limited to one entry (the previous request's
cache only, as the engine had it) and, in a full run, the engine as it was at
``--baseline-ref`` (its code exported from git). Raw results go to <workdir>/engine.json; a
full run also stores them in benchmarks/results/engine.json and renders its doc section
from that file alone, so a test can re-render the section and compare it with the doc.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from benchmarks.doc_sections import DOC, REPO, commit_text, machine_summary, now_text, write_section
from benchmarks.engine import report
from benchmarks.engine.traffic import Engine, Session, filler, iteration, new_session, shared_prefix, take_turn
from components.core.services import Service, free_port, start_service

SECTION = "Dev engine: prefix cache"
RESULT = REPO / "benchmarks" / "results" / "engine.json"  # the section is rendered from it alone
BASELINE_REF = "283839b"  # the last commit before the prefix-cache store and the cold-path fix
MODEL = "policy"


@dataclass(frozen=True)
class Plan:
    prefix_tokens: int  # shared system prompt + tool schemas, as rendered
    cold_tokens: int  # the cold call's prompt
    tools: int  # how many of those schemas (about 500 tokens each)
    sessions: int
    turns: int
    max_tokens: int
    task_sentences: int  # a session's own task: ~20 tokens a sentence
    result_sentences: int  # each turn's tool result
    rounds: int  # every variant once per round, the order reversed every other round


FULL = Plan(prefix_tokens=20_000, cold_tokens=22_000, tools=16, sessions=8, turns=3, max_tokens=32,
            task_sentences=15, result_sentences=15, rounds=2)  # fmt: skip
QUICK = Plan(prefix_tokens=2_000, cold_tokens=2_000, tools=2, sessions=3, turns=2, max_tokens=8,
             task_sentences=5, result_sentences=5, rounds=1)  # fmt: skip


@dataclass
class VariantResult:
    variant: str
    iteration_s: float
    calls: list[dict[str, Any]]
    cold_s: float
    cold_prompt_tokens: int
    warm_s: float
    warm_prompt_tokens: int
    cache_iteration: dict[str, Any] | None  # the counters' change over the iteration
    cache_warm: dict[str, Any] | None  # ... over the warm continuation


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _delta(after: dict[str, Any] | None, before: dict[str, Any] | None) -> dict[str, Any] | None:
    if after is None or before is None:
        return None  # the baseline engine has no counters
    keys = ("hits", "misses", "copies", "reused_tokens", "prefilled_tokens", "evictions")
    return {key: after[key] - before[key] for key in keys} | {"entries": after["entries"], "bytes": after["bytes"]}


async def _units_for(engine: Engine, target: int, messages: Callable[[int], list[dict[str, Any]]]) -> int:
    """How many units (paragraphs, sentences) make ``messages(units)`` about ``target`` tokens."""
    small = await engine.prompt_tokens(messages(10))
    large = await engine.prompt_tokens(messages(110))
    return max(1, 10 + round((target - small) * 100 / (large - small)))


def _system(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": text}]


def _unrelated(sentences: int) -> list[dict[str, Any]]:
    """A prompt sharing nothing cached: another harness's system prompt."""
    return [*_system("A different harness.\n\n" + filler(7, sentences)), {"role": "user", "content": "Begin."}]


async def _measure(url: str, variant: str, plan: Plan) -> VariantResult:
    timeout = aiohttp.ClientTimeout(total=1800)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        engine = Engine(http, url, MODEL, [], plan.max_tokens)
        engine.tools = shared_prefix(0, plan.tools)[1]
        paragraphs = await _units_for(engine, plan.prefix_tokens, lambda n: _system(shared_prefix(n, plan.tools)[0]))
        system = shared_prefix(paragraphs, plan.tools)[0]
        await engine.chat([{"role": "user", "content": "Warm up."}], seed=0)  # a process's first pass is slower
        before = (await engine.health()).get("kv_cache")
        sessions = [new_session(i, system, plan.task_sentences) for i in range(plan.sessions)]
        _log(f"{variant}: {plan.sessions} sessions x {plan.turns} turns at once")
        wall = await iteration(engine, sessions, plan.turns, plan.result_sentences)
        after = (await engine.health()).get("kv_cache")
        probe = Session(-1, _unrelated(await _units_for(engine, plan.cold_tokens, _unrelated)))
        _log(f"{variant}: cold call and its warm continuation")
        cold = await take_turn(engine, probe, 0, plan.result_sentences)
        warm_before = (await engine.health()).get("kv_cache")
        warm = await take_turn(engine, probe, 1, plan.result_sentences)
        warm_after = (await engine.health()).get("kv_cache")
    return VariantResult(
        variant=variant, iteration_s=wall, calls=[asdict(c) for s in sessions for c in s.calls],
        cold_s=cold.latency_s, cold_prompt_tokens=cold.prompt_tokens,
        warm_s=warm.latency_s, warm_prompt_tokens=warm.prompt_tokens,
        cache_iteration=_delta(after, before), cache_warm=_delta(warm_after, warm_before),
    )  # fmt: skip


@contextmanager
def _engine(code: Path, model: Path, work: Path, name: str, args: tuple[str, ...]) -> Iterator[Service]:
    port = free_port()
    # -P: `python -m` would put the working directory (this checkout) ahead of PYTHONPATH.
    argv = [sys.executable, "-P", "-m", "components.engine", "serve", "--model", str(model), "--port", str(port),
            "--served-model-name", MODEL, *args]  # fmt: skip
    env = {"PYTHONPATH": str(code)}
    service = start_service(name, argv, port=port, log_dir=work / "logs", env=env, deadline_s=180)
    try:
        yield service
    finally:
        service.stop()


def _export(ref: str, work: Path) -> Path:
    """The repository's code at ``ref``, exported from git (no checkout is touched)."""
    sha = subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO, check=True, capture_output=True, text=True)
    out = work / f"code-{sha.stdout.strip()}"
    if not (out / "components").is_dir():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", ref, "components"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def _pooled(runs: list[VariantResult]) -> VariantResult:
    """One variant's rounds: mean times, every call; the cache counters of the first round
    (the traffic is seeded, so every round makes the same cache decisions)."""
    mean = lambda name: statistics.fmean(getattr(r, name) for r in runs)  # noqa: E731
    first = runs[0]
    return VariantResult(
        variant=first.variant, iteration_s=mean("iteration_s"), calls=[c for r in runs for c in r.calls],
        cold_s=mean("cold_s"), cold_prompt_tokens=first.cold_prompt_tokens, warm_s=mean("warm_s"),
        warm_prompt_tokens=first.warm_prompt_tokens, cache_iteration=first.cache_iteration, cache_warm=first.cache_warm,
    )  # fmt: skip


def _results(raw: dict[str, Any]) -> list[VariantResult]:
    """Each variant's rounds pooled, in the order the variants were listed."""
    runs = [VariantResult(**r) for r in raw["runs"]]
    return [_pooled([r for r in runs if r.variant == variant]) for variant in raw["variants"]]


def section(raw: dict[str, Any]) -> str:
    """The doc section, from the stored result (``RESULT``) alone."""
    return report.section(raw, Plan(**raw["plan"]), _results(raw))


def run(plan: Plan, work: Path, baseline: str | None, store: bool, command: str) -> int:
    from components.engine import init_tiny_model

    work.mkdir(parents=True, exist_ok=True)
    model = init_tiny_model(work / "model")
    variants: list[tuple[str, Path, tuple[str, ...]]] = [
        (report.STORE, REPO, ()),
        (report.ONE_ENTRY, REPO, ("--kv-cache-entries", "1")),
    ]
    if baseline is not None:
        variants.append((f"{report.BEFORE} ({baseline})", _export(baseline, work), ()))
    date, load_before, commit = now_text(), os.getloadavg(), commit_text()
    runs: list[VariantResult] = []
    for round_ in range(plan.rounds):
        for index, (variant, code, args) in enumerate(variants if round_ % 2 == 0 else variants[::-1]):
            _log(f"round {round_ + 1}/{plan.rounds}: starting the engine: {variant}")
            with _engine(code, model, work, f"engine-{round_}-{index}", args) as service:
                runs.append(asyncio.run(_measure(service.url, variant, plan)))
    load = f"{load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    raw = {"command": command, "date": date, "commit": commit, "machine": machine_summary(), "load": load,
           "plan": asdict(plan), "variants": [variant for variant, _, _ in variants],
           "runs": [asdict(r) for r in runs]}  # fmt: skip
    (work / "engine.json").write_text(json.dumps(raw, indent=2))
    print(report.table(_results(raw)))
    _log(f"raw results: {work / 'engine.json'}")
    if store:
        RESULT.write_text(json.dumps(raw, indent=1) + "\n")
        write_section(SECTION, section(raw), DOC)
        _log(f"stored {RESULT} and wrote the '{SECTION}' section of {DOC}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 2k-token prefix, 3 sessions x 2 turns, no baseline")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="git ref of the engine to compare against")
    parser.add_argument("--no-baseline", action="store_true", help="leave the engine at --baseline-ref out")
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "engine", help="model, logs, engine.json")
    parser.add_argument("--no-doc", action="store_true", help="neither store the result nor rewrite docs/benchmarks.md")
    parser.add_argument("--render", action="store_true", help="write the doc section from the stored result only")
    args = parser.parse_args()
    if args.render:
        if not RESULT.exists():
            raise SystemExit(f"no stored result at {RESULT}: run a full benchmark first")
        write_section(SECTION, section(json.loads(RESULT.read_text())), DOC)
        sys.exit(0)
    plan = QUICK if args.quick else FULL
    baseline = None if args.quick or args.no_baseline else args.baseline_ref
    command = " ".join([".venv/bin/python", "benchmarks/bench_engine.py", *sys.argv[1:]])
    sys.exit(run(plan, args.workdir.resolve(), baseline, not (args.no_doc or args.quick), command))


if __name__ == "__main__":
    main()
