"""Prefix continuity per harness, with and without the proxy's token provenance.

    .venv/bin/python benchmarks/bench_continuity.py             # the `bench-continuity` make target
    .venv/bin/python benchmarks/bench_continuity.py --no-real   # simulated shapes only (about 2 minutes), printed
    .venv/bin/python benchmarks/bench_continuity.py --no-doc    # same run, printed only
    .venv/bin/python benchmarks/bench_continuity.py --render    # the doc section from the stored result

Starts the dev engine on the tiny model with the continuity script
(``benchmarks/continuity/shapes.py``: tool calls, text before some of them, once sampled
by the model), then records sessions through a training-mode proxy with token
provenance off and on: harness-shaped call sequences (reference harness, Claude Code,
Codex, mini-swe-agent), and each real harness CLI that is installed (``make harnesses``)
run by the rollout runner, a few rollouts each: with that policy, with a reasoning policy
(every answer thinks first, read with the ``qwen3`` reasoning parser), and Claude Code
handing work to a subagent. Continuity is the share of calls after a session's first that
extend a training row (``components.trainer.rows.merge_calls``); the others are branches
(a subagent, a rewritten history) or breaks. Prints the tables; a full run (neither
``--no-real`` nor ``--no-doc``) stores its raw figures in ``benchmarks/results/continuity.json``
and rewrites the "Token provenance: measured continuity" section of docs/proxy.md from that
stored result alone, so a test can re-render the section and compare.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.continuity.measure import Continuity, run_shape
from benchmarks.continuity.real import HARNESSES, installed, run_real
from benchmarks.continuity.shapes import REASONING_ARGS, REASONING_SCRIPT, SCRIPT, SHAPES, SUBAGENT_SCRIPT
from benchmarks.doc_sections import REPO, Stamp, commit_text, machine_summary, now_text, write_section
from components.core.services import free_port, start_service

SECTION = "Token provenance: measured continuity"
DOC = REPO / "docs" / "proxy.md"
COMMAND = ".venv/bin/python benchmarks/bench_continuity.py"
RESULT = REPO / "benchmarks" / "results" / "continuity.json"  # the section is rendered from it alone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=3, help="Simulated sessions per shape and setting.")
    parser.add_argument("--rollouts", type=int, default=3, help="Rollouts per real harness, policy and setting.")
    parser.add_argument("--no-real", action="store_true", help="Skip the real harness CLIs; store nothing.")
    parser.add_argument("--no-doc", action="store_true", help="Print only; store nothing, leave docs/proxy.md as it is.")
    parser.add_argument("--render", action="store_true", help="Rewrite the doc section from the stored result only.")
    args = parser.parse_args(argv)
    if args.render:
        if not RESULT.exists():
            raise SystemExit(f"no stored result at {RESULT}: run {COMMAND} first")
        text = section(json.loads(RESULT.read_text()))
        print(text)
        write_section(SECTION, text, DOC)
        return 0
    argv = sys.argv[1:] if argv is None else argv
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-continuity-") as scratch:
        work = Path(scratch)
        with _scripted_engine(work / "plain", SCRIPT) as engine:
            simulated = _simulated(engine.url, work, args.sessions)
            real = [] if args.no_real else _real("plain", engine.url, work, HARNESSES, args.rollouts)
        if not args.no_real:
            with _scripted_engine(work / "reasoning", REASONING_SCRIPT, REASONING_ARGS) as engine:
                real += _real("reasoning", engine.url, work, HARNESSES, args.rollouts, REASONING_ARGS)
            with _scripted_engine(work / "subagent", SUBAGENT_SCRIPT) as engine:
                real += _real("subagent", engine.url, work, ("claude-code",), args.rollouts)
    raw = {
        "command": " ".join([COMMAND, *argv]), "date": date, "commit": commit, "machine": machine_summary(),
        "load_before": list(load_before), "load_after": list(os.getloadavg()),
        "sessions": args.sessions, "rollouts": args.rollouts, "simulated": simulated, "real": real,
        "skipped": [] if args.no_real else [name for name in HARNESSES if not installed(name)],
    }  # fmt: skip
    stored = json.dumps(raw, indent=1) + "\n"
    text = section(json.loads(stored))  # what --render and the test will make of the stored file
    print(text)
    # Only a full run is the section's figures: a partial one must not replace them.
    if not (args.no_doc or args.no_real):
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(stored)
        write_section(SECTION, text, DOC)
    return 0


def _scripted_engine(work: Path, script: dict[str, Any], args: tuple[str, ...] = ()) -> Any:
    """The dev engine on a fresh tiny model, playing ``script`` (a context manager)."""
    from components.engine import init_tiny_model

    model = init_tiny_model(work / "model")
    script_path = work / "script.json"
    script_path.write_text(json.dumps(script))
    port = free_port()
    argv = [sys.executable, "-m", "components.engine", "serve", "--model", str(model), "--port", str(port),
            "--served-model-name", "policy", "--script", str(script_path), "--threads", "1", *args]  # fmt: skip
    env = {"PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return start_service("engine", argv, port=port, log_dir=work / "logs", env=env, deadline_s=180)


def _simulated(engine_url: str, work: Path, n: int) -> list[dict[str, Any]]:
    pairs = []
    for shape, driver in SHAPES.items():
        off, on = (
            asyncio.run(run_shape(shape, driver, engine_url, work / f"sim-{shape}-{on}", provenance=on, sessions=n))
            for on in (False, True)
        )
        print(f"simulated {shape}: {off.share:.0%} -> {on.share:.0%}", flush=True)
        pairs.append({"off": _stored(off), "on": _stored(on)})
    return pairs


def _real(
    policy: str, engine_url: str, work: Path, harnesses: tuple[str, ...], rollouts: int, proxy_args: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    runs = []
    for name in (h for h in harnesses if installed(h)):
        (off, off_status), (on, on_status) = (
            run_real(name, engine_url, work / f"real-{policy}-{name}-{on}", provenance=on, rollouts=rollouts,
                     proxy_args=proxy_args)  # fmt: skip
            for on in (False, True)
        )
        print(f"real {name}, {policy} policy: {off.share:.0%} -> {on.share:.0%} ({off_status}, {on_status})", flush=True)
        runs.append({"policy": policy, "off": _stored(off), "on": _stored(on),
                     "statuses_off": off_status, "statuses_on": on_status})  # fmt: skip
    return runs


def _stored(result: Continuity) -> dict[str, Any]:
    # Not dataclasses.asdict: it rebuilds a Counter from (key, count) pairs, counting the pairs.
    return {**vars(result), "chat_reasons": dict(result.chat_reasons.most_common())}


def _continuity(stored: dict[str, Any]) -> Continuity:
    """A stored ``Continuity`` back; its counters keep their stored order, so ties render as measured."""
    counters = {"branches": Counter(stored["branches"]), "chat_reasons": Counter(stored["chat_reasons"])}
    return Continuity(**(stored | counters))


def _statuses(statuses: list[str]) -> str:
    return ", ".join(f"{status} {statuses.count(status)}" for status in sorted(set(statuses)))


def _reasons(result: Continuity) -> str:
    return "; ".join(f"{reason} ({count})" for reason, count in result.chat_reasons.most_common()) or "-"


def _row(off: Continuity, on: Continuity) -> str:
    return (
        f"| {on.shape} | {on.sessions} | {on.calls} | {_share(off)} | {_share(on)} | {on.token_path} | {_reasons(on)} |"
    )


def _real_row(off: Continuity, on: Continuity, policy: str, status: str) -> str:
    branches = ", ".join(f"{kind} {n}" for kind, n in sorted(on.branches.items())) or "-"
    return (
        f"| {on.shape} | {policy} | {on.sessions} | {on.calls} | {_share(off)} | {_share(on)} | {branches} | {on.breaks} "
        f"| {on.sampled_in_rows} / {on.sampled_recorded} | {on.token_path} | {_reasons(on)} | {status} |"
    )


def _share(result: Continuity) -> str:
    return f"{result.share:.0%} ({result.continued}/{result.continued + result.broken})"


def section(raw: dict[str, Any]) -> str:
    """The doc section, from the stored result alone (``RESULT``)."""
    stamp = Stamp(*(raw[f.name] for f in dataclasses.fields(Stamp)))
    lines = [
        f"## {SECTION}",
        "",
        f"{stamp.stamp_line()} Rendered from `benchmarks/results/continuity.json`.",
        "Continuity: the share of calls after a session's first that extend the previous call's",
        "training row (calls continued / calls judged), with token provenance off, then on; the",
        "last two columns are about the runs with it on. Engine: the dev engine on the tiny model",
        "playing `benchmarks/continuity/shapes.py`'s script (text before two of the tool calls, 24",
        "tokens of it sampled by the model; a short sampled final answer). The engine forces the",
        "scripted tokens: recorded, never trained on, so the sampled-token column leaves them out,",
        "and with them every token of the reasoning policy, whose answers are all scripted.",
        "",
        f"Simulated harness shapes, {raw['sessions']} sessions each (`benchmarks/continuity/shapes.py`):",
        "",
        "| shape | sessions | calls | without provenance | with provenance | token-path calls | chat-path calls, why |",
        "|---|---|---|---|---|---|---|",
        *(_row(_continuity(pair["off"]), _continuity(pair["on"])) for pair in raw["simulated"]),
    ]
    if raw["real"]:
        lines += [
            "",
            f"Real harness CLIs at their pinned versions, {raw['rollouts']} rollouts each "
            "(`benchmarks/continuity/real.py`); the branch, break and token columns are about the runs with "
            "provenance on:",
            "",
            "| harness | policy | sessions | calls | without provenance | with provenance | branches | breaks "
            "| sampled tokens in rows / recorded | token-path calls | chat-path calls, why | rollouts (off / on) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *(
                _real_row(_continuity(run["off"]), _continuity(run["on"]), run["policy"],
                          f"{_statuses(run['statuses_off'])} / {_statuses(run['statuses_on'])}")  # fmt: skip
                for run in raw["real"]
            ),
        ]
    if raw["skipped"]:
        lines += ["", f"Not installed, so not run: {', '.join(raw['skipped'])} (`make harnesses`)."]
    return "\n".join(lines + ["", *_READING]) + "\n"


_READING = [
    "Without provenance, every answer with text before its tool call (the script's first and third",
    "turns) comes back one newline longer (the hermes parser keeps the model's `\\n` before",
    "`<tool_call>` in the content and Qwen's template writes its own), and the first one's sampled",
    "text re-encodes to other ids as well; tool calls without text re-render to the ids the model",
    "sampled. The reasoning policy's thinking goes to each harness in its surface's reasoning field",
    "(chat `reasoning`, a Messages `thinking` block, a Responses `reasoning` item) and none sends it",
    "back, so without provenance no row continues; with it the proxy splices the sampled thinking",
    "back in. OpenClaw moves its internal-context user message to the end of every request, so the",
    "context of each answer changes after it was sampled: each of its calls becomes a `rewrite`",
    "branch, a row of its own (its whole prompt as context, then its answer), and every sampled",
    "token is still trained exactly once (rows / recorded). Claude Code's subagent (its `Agent`",
    "tool) interleaves its calls with the parent's: they form a `subagent` branch, and the",
    "parent's calls after it continue the parent's row.",
]


if __name__ == "__main__":
    sys.exit(main())
