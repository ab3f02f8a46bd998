"""Measure the pipeline's own overhead: where the quickstart's iteration time goes, and rollouts per minute.

    .venv/bin/python benchmarks/bench_overhead.py               # the `bench-overhead` make target
    .venv/bin/python benchmarks/bench_overhead.py --no-doc      # same runs, docs untouched
    .venv/bin/python benchmarks/bench_overhead.py --cli-start   # only the cold `openforge --help` (seconds)
    .venv/bin/python benchmarks/bench_overhead.py --engines     # only the dev engine vs vLLM's CPU build (minutes)
    .venv/bin/python benchmarks/bench_overhead.py --sandbox     # only a rollout pod's start-up, sandboxed or not (a minute)
    .venv/bin/python benchmarks/bench_overhead.py --overlap     # only a 4-iteration quickstart, overlapped or not (minutes)
    .venv/bin/python benchmarks/bench_overhead.py --engine-sweep  # only both engines' rollouts/min by concurrency (minutes)

Runs examples/quickstart.yaml (all its iterations) through ``run_experiment`` into a fresh
store under .bench/overhead/, timing it from outside: the executor's node events, the
proxy's recorded calls, the harness and verifier processes, and the trainer's update
re-run on the stored batch. Each iteration's wall time is split into model, harness and
overhead (``overhead/breakdown.py`` defines the split). Then one iteration of the
quickstart at each rollout concurrency of ``SWEEP`` for rollouts per minute, and the
start-up cost of each kind of process and the cold start of `openforge --help`, measured
apart, and the dev engine against vLLM's CPU build on the tiny model (``overhead/engines.py``;
skipped, saying so, without `make vllm`), and a rollout pod's start-up under the `process`
and the `sandbox` runtime (``overhead/sandbox.py``), and a 4-iteration quickstart in order
against overlapped (``overhead/overlap.py``). Rewrites the "Pipeline overhead" section of
docs/benchmarks.md (``--cli-start``, ``--engines``, ``--sandbox``, ``--overlap``: that part's subsection alone). Exits 1
when the overhead target is missed (``--cli-start``: the `--help` target).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.doc_sections import (
    DOC,
    REPO,
    commit_text,
    machine_summary,
    now_text,
    stamped,
    write_section_keeping_subsections,
    write_subsection,
)
from benchmarks.overhead import cli_start, engine_bound, engine_sweep, engines, overlap, report, sandbox
from benchmarks.overhead.breakdown import Split, split_iteration
from benchmarks.overhead.probes import EventLog, ProcessWatch, model_call_spans, update_seconds
from benchmarks.pipeline_runs import bench_config, run_fresh
from components.core.config import ExperimentConfig
from components.core.storage import open_store

COMMAND = ".venv/bin/python benchmarks/bench_overhead.py"
QUICKSTART = REPO / "examples" / "quickstart.yaml"
# concurrency -> samples per task (the quickstart has 4 tasks): enough rollouts to fill
# every slot at least once while the whole sweep stays within a few minutes.
SWEEP = {1: 2, 8: 8, 32: 8}
_CLI = ["pipelines.cli"]
STARTUP_PROBES: dict[str, list[str]] = {
    "bare interpreter": [],
    "any step, sidecar or runner: the openforge CLI": _CLI,
    "rollout runner": [*_CLI, "components.rollout.runner"],
    "proxy sidecar": [*_CLI, "components.proxy.serve"],
    "serve (dev engine)": [*_CLI, "components.engine.server", "torch", "transformers"],
    "train": [*_CLI, "components.trainer.step", "torch", "transformers", "verl.trainer.ppo.core_algos", "verl.workers.config"],
    "commit (MLflow, reward plot)": [*_CLI, "mlflow", "matplotlib.figure"],
}


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def measure(config: ExperimentConfig, root: Path) -> tuple[float, list[Split]]:
    """Run ``config`` afresh in ``root``; the run's wall time and each iteration's split."""

    log = EventLog()
    # `openforge run`'s default runtime, as users run it (the sandbox on Linux); a pod's
    # start-up under each runtime is measured apart (sandbox.py).
    with log.attached(), ProcessWatch() as watch:
        finished = run_fresh(config, root)
    store = open_store(config.storage.uri)
    splits = []
    for iteration, events in sorted(log.iterations.items()):
        wall = finished.logged[iteration]["time/iteration_s"]
        calls = model_call_spans(store, config.name, iteration)
        update = update_seconds(store, config, iteration)
        splits.append(split_iteration(iteration, events, wall, calls, watch.lifetimes, update))
    return finished.wall_s, splits


def startup_seconds(modules: list[str], repeats: int = 2) -> float:
    """Best wall time of a fresh interpreter importing ``modules`` (the process's fixed cost)."""
    code = "import " + ", ".join(modules) if modules else "pass"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - started)
    return best


def warm_start_seconds(repeats: int = 3) -> float:
    """Best wall time of `openforge --help` forked from a ready warm-start server, to its exit."""
    from components.core.services import openforge_argv
    from pipelines.warm_start import openforge_warm_starts

    best = math.inf
    with openforge_warm_starts() as warm, tempfile.TemporaryDirectory() as scratch:
        if not warm.wait_ready(300):
            raise RuntimeError("the warm-start server did not become ready within 300 s")
        for _ in range(repeats):
            started = time.perf_counter()
            warm.spawn(openforge_argv("--help"), REPO, dict(os.environ), Path(scratch) / "help.log").wait(60)
            best = min(best, time.perf_counter() - started)
    return best


def measure_breakdown(workdir: Path, command: str = COMMAND) -> report.Breakdown:
    """The quickstart's iterations split, one iteration per concurrency, and start-up costs."""
    from pipelines.run import DEFAULT_RUNTIME

    os.chdir(REPO)  # the configs' relative task folders resolve from the repository
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()
    _log("quickstart: every iteration, timed")
    config = bench_config(QUICKSTART, workdir / "quickstart")
    quickstart_wall, quickstart = measure(config, workdir / "quickstart")

    sweep = []
    for concurrency, samples in SWEEP.items():
        _log(f"one iteration at concurrency {concurrency} ({samples} samples per task)")
        root = workdir / f"concurrency-{concurrency}"
        overrides = {"iterations": 1, "rollout.concurrency": concurrency, "rollout.samples_per_task": samples}
        _, (split,) = measure(bench_config(QUICKSTART, root, overrides), root)
        sweep.append(report.SweepPoint(concurrency, samples, split))

    _log("start-up costs")
    startup = {name: (modules, startup_seconds(modules)) for name, modules in STARTUP_PROBES.items()}
    warm_s = warm_start_seconds()
    cold_help = measure_cli_start(command)
    info = report.RunInfo(
        command=command, date=date, commit=commit, runtime=DEFAULT_RUNTIME, machine=machine_summary(),
        load_before=load_before, load_after=os.getloadavg(), quickstart_wall_s=quickstart_wall, warm_start_s=warm_s,
    )  # fmt: skip
    r, h = config.rollout, config.harness
    quickstart_text = (
        f"`examples/quickstart.yaml` as shipped: {config.iterations} iterations, {r.samples_per_task} samples "
        f"of each task, {r.concurrency} rollouts at once, the `{h.name}` harness with up to {h.max_turns} "
        f"model calls of at most {h.max_tokens} tokens, the tiny CPU model on the dev engine; store and MLflow "
        "database in `.bench/overhead/quickstart/`."
    )
    sweep_text = (
        "One iteration of the quickstart (iteration 0) per concurrency, with "
        + ", ".join(f"{s} samples per task at concurrency {c}" for c, s in SWEEP.items())
        + " (4 tasks). *Rollout phase* = first rollout pod started to last one ended. The machine has "
        "2 cores: each rollout runs 4 Python processes (runner, proxy sidecar, harness, verifier), so "
        "beyond a few concurrent rollouts they queue for the CPU, not for the engine."
    )
    return report.Breakdown(info, quickstart, sweep, startup, quickstart_text, sweep_text, cold_help)


def write_breakdown(breakdown: report.Breakdown) -> None:
    """Store the breakdown's figures, then render its part of the section from them alone; the
    subsections other parts of the benchmark wrote stay."""
    report.save_breakdown(breakdown)
    write_section_keeping_subsections(report.SECTION, report.load_breakdown().markdown())
    _log(f"wrote {report.BREAKDOWN_RESULT} and the {report.SECTION!r} section of {DOC}")


def run_breakdown(workdir: Path, doc: bool) -> int:
    """Only the quickstart's split, the concurrency sweep and the start-up costs."""
    breakdown = measure_breakdown(workdir, f"{COMMAND} --breakdown")
    print("\n".join(report.terminal_lines(breakdown.quickstart, breakdown.sweep, breakdown.startup)))
    if doc:
        write_breakdown(breakdown)
    return 0 if report.target_met(breakdown.quickstart) else 1


def run(workdir: Path, doc: bool) -> int:
    breakdown = measure_breakdown(workdir)
    _log("the dev engine and vLLM's CPU build, side by side")
    engine_comparison = measure_engines(COMMAND, workdir)
    _log("a rollout pod's start-up, process and sandbox runtimes alternating")
    sandbox_figures = measure_sandbox(COMMAND)
    _log("the quickstart in order, then overlapped")
    overlap_figures = measure_overlap(COMMAND, workdir)
    _log("both engines' rollouts per minute by concurrency")
    sweep_figures = measure_engine_sweep(COMMAND, workdir)
    _log("real Claude Code at concurrency 8: the engine's share of the machine")
    bound_figures = measure_engine_bound(COMMAND, workdir)

    print("\n".join(report.terminal_lines(breakdown.quickstart, breakdown.sweep, breakdown.startup)))
    print(f"warm start of an openforge container (fork, `--help`, exit): {breakdown.info.warm_start_s:.3f} s")
    print(cli_start.terminal_line(breakdown.cold_help))
    print("\n".join(engines.terminal_lines(engine_comparison)))
    print("\n".join(sandbox.terminal_lines(sandbox_figures)))
    print("\n".join(overlap.terminal_lines(overlap_figures)))
    print("\n".join(engine_sweep.terminal_lines(sweep_figures)))
    print("\n".join(engine_bound.terminal_lines(bound_figures)))
    if doc:
        write_breakdown(breakdown)
        write_subsection(report.SECTION, engines.SUBSECTION, engines.subsection_markdown(engine_comparison))
        write_subsection(report.SECTION, sandbox.SUBSECTION, sandbox.subsection_markdown(sandbox_figures))
        write_subsection(report.SECTION, overlap.SUBSECTION, overlap.subsection_markdown(overlap_figures))
        write_subsection(report.SECTION, engine_sweep.SUBSECTION, engine_sweep.subsection_markdown(sweep_figures))
        write_subsection(report.SECTION, engine_bound.SUBSECTION, engine_bound.subsection_markdown(bound_figures))
        _log(f"wrote the {report.SECTION!r} section of {DOC}")
    return 0 if report.target_met(breakdown.quickstart) else 1


def measure_cli_start(command: str) -> cli_start.CliStart:
    """The cold `openforge --help` runs, with what the doc says about when and where they ran."""
    return stamped(cli_start.CliStart, command, lambda: (cli_start.help_seconds(REPO), cli_start.floor_seconds(REPO)))


def run_cli_start(doc: bool) -> int:
    """Only the cold start of `openforge --help`: seconds, where the whole benchmark takes many minutes."""
    measured = measure_cli_start(f"{COMMAND} --cli-start")
    print(cli_start.terminal_line(measured))
    if doc:
        write_subsection(report.SECTION, cli_start.SUBSECTION, cli_start.subsection_markdown(measured))
        _log(f"wrote {cli_start.SUBSECTION!r} in the {report.SECTION!r} section of {DOC}")
    return 0 if cli_start.target_met(measured) else 1


def measure_engines(command: str, workdir: Path) -> engines.EngineComparison:
    """The engines side by side, with what the doc says about when and where they ran."""
    return stamped(engines.EngineComparison, command, lambda: engines.measure(REPO, workdir / "engines"))


def run_engines(workdir: Path, doc: bool) -> int:
    """Only the dev engine against vLLM's CPU build: minutes (vLLM's start), not the whole benchmark."""
    measured = measure_engines(f"{COMMAND} --engines", workdir)
    return _report(engines, measured, doc)


def measure_sandbox(command: str) -> sandbox.SandboxFigures:
    """A rollout pod's start-up under both runtimes, with what the doc says about when and where."""
    return stamped(sandbox.SandboxFigures, command, lambda: sandbox.measure(REPO))


def run_sandbox(doc: bool) -> int:
    """Only the sandbox's start-up cost: about a minute, not the whole benchmark."""
    measured = measure_sandbox(f"{COMMAND} --sandbox")
    return _report(sandbox, measured, doc)


def measure_overlap(command: str, workdir: Path) -> overlap.OverlapFigures:
    """The quickstart in order and overlapped, with what the doc says about when and where they ran."""
    return stamped(overlap.OverlapFigures, command, lambda: (overlap.measure(REPO, workdir, _log),))


def run_overlap(workdir: Path, doc: bool) -> int:
    """Only the overlap comparison: two multi-iteration quickstart runs."""
    os.chdir(REPO)  # the quickstart's relative task folder resolves from the repository
    measured = measure_overlap(f"{COMMAND} --overlap", workdir)
    return _report(overlap, measured, doc)


def measure_engine_sweep(command: str, workdir: Path) -> engine_sweep.EngineSweep:
    """Both engines at each concurrency, with what the doc says about when and where they ran."""
    return stamped(engine_sweep.EngineSweep, command, lambda: engine_sweep.measure(REPO, workdir, _log))


def run_engine_sweep(workdir: Path, doc: bool) -> int:
    """Only the engines' rollouts per minute by concurrency: six one-iteration runs."""
    os.chdir(REPO)  # the example's relative task folder resolves from the repository
    measured = measure_engine_sweep(f"{COMMAND} --engine-sweep", workdir)
    return _report(engine_sweep, measured, doc)


def measure_engine_bound(command: str, workdir: Path) -> engine_bound.EngineBound:
    """Real Claude Code's rollout phase split between the engine and the rest of the machine."""
    return stamped(engine_bound.EngineBound, command, lambda: engine_bound.measure(REPO, workdir, _log))


def run_engine_bound(workdir: Path, doc: bool) -> int:
    """Only the bound on a faster engine's gain with real Claude Code: one evaluation pass."""
    os.chdir(REPO)  # the example's relative task folder resolves from the repository
    measured = measure_engine_bound(f"{COMMAND} --engine-bound", workdir)
    return _report(engine_bound, measured, doc)


def _report(part, measured, doc: bool) -> int:
    """A part run alone: its terminal lines, then its subsection in the doc (``part``: one of
    benchmarks/overhead's modules, with ``terminal_lines``, ``SUBSECTION``, ``subsection_markdown``)."""
    print("\n".join(part.terminal_lines(measured)))
    if doc:
        write_subsection(report.SECTION, part.SUBSECTION, part.subsection_markdown(measured))
        _log(f"wrote {part.SUBSECTION!r} in the {report.SECTION!r} section of {DOC}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=REPO / ".bench" / "overhead",
                        help="stores, MLflow databases and executor folders; emptied first (default: .bench/overhead)")
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/benchmarks.md")
    parser.add_argument("--breakdown", action="store_true",
                        help="measure only the quickstart's split, the concurrency sweep and the start-up costs")
    parser.add_argument("--cli-start", action="store_true", help="measure only the cold start of `openforge --help`")
    parser.add_argument("--engines", action="store_true", help="measure only the dev engine against vLLM's CPU build")
    parser.add_argument("--sandbox", action="store_true", help="measure only a rollout pod's start-up, sandboxed or not")
    parser.add_argument("--overlap", action="store_true", help="measure only the quickstart overlapped against in order")
    parser.add_argument("--engine-sweep", action="store_true", help="measure only both engines' rollouts per minute by concurrency")
    parser.add_argument("--engine-bound", action="store_true",
                        help="measure only how much a faster engine could speed up real Claude Code rollouts")
    args = parser.parse_args()
    if args.breakdown:
        sys.exit(run_breakdown(args.workdir.resolve(), doc=not args.no_doc))
    if args.engine_bound:
        sys.exit(run_engine_bound(args.workdir.resolve(), doc=not args.no_doc))
    if args.engine_sweep:
        sys.exit(run_engine_sweep(args.workdir.resolve(), doc=not args.no_doc))
    if args.overlap:
        sys.exit(run_overlap(args.workdir.resolve(), doc=not args.no_doc))
    if args.sandbox:
        sys.exit(run_sandbox(doc=not args.no_doc))
    if args.engines:
        sys.exit(run_engines(args.workdir.resolve(), doc=not args.no_doc))
    if args.cli_start:
        sys.exit(run_cli_start(doc=not args.no_doc))
    sys.exit(run(args.workdir.resolve(), doc=not args.no_doc))


if __name__ == "__main__":
    main()
