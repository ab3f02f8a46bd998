"""The overhead benchmark's figures: terminal lines and the "Pipeline overhead" doc section."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_sections import REPO
from benchmarks.overhead.breakdown import EXECUTOR, PHASES, Split
from benchmarks.overhead.cli_start import CliStart, subsection_markdown

SECTION = "Pipeline overhead"
TARGET_SHARE = 0.05
BREAKDOWN_RESULT = REPO / "benchmarks" / "results" / "overhead-breakdown.json"


@dataclass(frozen=True)
class SweepPoint:
    concurrency: int
    samples_per_task: int
    split: Split


@dataclass(frozen=True)
class RunInfo:
    command: str
    date: str
    commit: str
    runtime: str  # the rollout pods' runtime: `openforge run`'s default, as users run it
    machine: str
    load_before: tuple[float, float, float]  # os.getloadavg() when the benchmark started
    load_after: tuple[float, float, float]
    quickstart_wall_s: float  # the whole run_experiment call of the quickstart
    warm_start_s: float  # `openforge --help` forked from a ready warm-start server, to its exit


def overall_share(splits: list[Split]) -> float:
    """Everything outside the model and the harness, as a share of the iterations' wall time."""
    return sum(s.overhead_s for s in splits) / sum(s.wall_s for s in splits)


def orchestration_share(split: Split) -> float:
    return split.overhead_by_phase.get(EXECUTOR, 0.0) / split.wall_s


def target_met(splits: list[Split]) -> bool:
    """Orchestration under the target over the quickstart's iterations taken together.

    Each iteration's share is shown beside it; the first carries the run's one-time
    cold starts (the warm-start server is still importing), so it is not judged alone.
    """
    return _orchestration(splits) < TARGET_SHARE


def _orchestration(splits: list[Split]) -> float:
    return sum(s.overhead_by_phase.get(EXECUTOR, 0.0) for s in splits) / sum(s.wall_s for s in splits)


def verdict_lines(splits: list[Split]) -> list[str]:
    orchestration = _orchestration(splits)
    mark = "PASS" if target_met(splits) else "FAIL"
    each = lambda shares: ", ".join(f"{v:.1%}" for v in shares)  # noqa: E731
    return [
        f"**{mark}** orchestration (the executor's own time: scheduling, waiting between nodes, stopping the "
        f"engine) under {TARGET_SHARE:.0%} of iteration time: {orchestration:.1%} over the quickstart's "
        f"iterations ({each(orchestration_share(s) for s in splits)} each)",
        f"For scale, no target: all overhead (orchestration, storage, tracking, process start-up) is "
        f"{overall_share(splits):.0%} ({each(s.overhead_share for s in splits)} each); its largest parts: "
        f"{dominant_phases(splits)}",
    ]


def dominant_phases(splits: list[Split], top: int = 3) -> str:
    seconds = {p: sum(s.overhead_by_phase.get(p, 0.0) for s in splits) for p in PHASES}
    overhead = sum(s.overhead_s for s in splits)
    ranked = sorted(seconds.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{p} {v / overhead:.0%}" for p, v in ranked)


def _mean(values: list[float]) -> str:
    return f"{statistics.fmean(values):.2f}" if values else "-"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in rows)]


def split_table(splits: list[Split]) -> list[str]:
    head = ["iteration", "wall s", "model: engine calls s", "model: update s", "harness s", "overhead s", "overhead share"]
    rows = [
        [str(s.iteration), f"{s.wall_s:.1f}", f"{s.engine_calls_s:.1f}", f"{s.update_s:.2f}", f"{s.harness_s:.1f}",
         f"{s.overhead_s:.1f}", f"{s.overhead_share:.0%}"]
        for s in splits
    ]  # fmt: skip
    rows.append([
        "all", f"{sum(s.wall_s for s in splits):.1f}", f"{sum(s.engine_calls_s for s in splits):.1f}",
        f"{sum(s.update_s for s in splits):.2f}", f"{sum(s.harness_s for s in splits):.1f}",
        f"{sum(s.overhead_s for s in splits):.1f}", f"{overall_share(splits):.0%}",
    ])  # fmt: skip
    return _table(head, rows)


def phase_table(splits: list[Split]) -> list[str]:
    head = ["overhead in", *(f"it {s.iteration} s" for s in splits), "share of wall"]
    wall = sum(s.wall_s for s in splits)
    rows = []
    for phase in PHASES:
        values = [s.overhead_by_phase.get(phase, 0.0) for s in splits]
        rows.append([phase, *(f"{v:.1f}" for v in values), f"{sum(values) / wall:.0%}"])
    return _table(head, rows)


def pod_table(splits: list[Split]) -> list[str]:
    pods = [v for s in splits for v in s.pod_s]
    harness = [v for s in splits for v in s.harness_lifetimes_s]
    verifier = [v for s in splits for v in s.verifier_lifetimes_s]
    rollouts = sum(s.rollouts for s in splits)
    calls = sum(s.calls for s in splits)
    latency = sum(s.call_latency_s for s in splits)
    rows = [
        ["rollout pod (proxy sidecar + runner, start to outputs uploaded)", _mean(pods)],
        ["harness process", _mean(harness)],
        ["verifier process", _mean(verifier)],
        ["model calls per rollout", f"{calls / rollouts:.1f}" if rollouts else "-"],
        ["latency per model call (queueing in the engine included)", f"{latency / calls:.2f}" if calls else "-"],
    ]
    return _table(["mean per rollout", "seconds (or count)"], rows)


def sweep_table(points: list[SweepPoint]) -> list[str]:
    head = ["concurrency", "rollouts", "rollout phase s", "rollouts/min (rollout phase)", "iteration wall s",
            "rollouts/min (whole iteration)", "overhead share"]  # fmt: skip
    rows = [
        [str(p.concurrency), str(p.split.rollouts), f"{p.split.rollout_phase_s:.1f}", f"{p.split.rollouts_per_minute:.1f}",
         f"{p.split.wall_s:.1f}", f"{60 * p.split.rollouts / p.split.wall_s:.1f}", f"{p.split.overhead_share:.0%}"]
        for p in points
    ]  # fmt: skip
    return _table(head, rows)


def startup_table(startup: dict[str, tuple[list[str], float]]) -> list[str]:
    rows = [[name, ", ".join(f"`{m}`" for m in modules) or "nothing (`python -c pass`)", f"{seconds:.2f}"]
            for name, (modules, seconds) in startup.items()]  # fmt: skip
    return _table(["process", "imports", "seconds (best of 2)"], rows)


_DEFINITION = """How an iteration's wall time is split (each moment goes to exactly one bucket, in this order):

1. **model**: a model call is in flight, from the proxy receiving it to the answer complete, as the proxy recorded it (`started_at`, `latency_ms`; the dev engine runs one request at a time, so a call's latency includes its wait in the engine's queue), or the trainer computes its update (forward, backward, optimizer step: `cpu_update` re-run in the benchmark on the stored batch and checkpoint of that iteration, with its imports done beforehand);
2. **harness**: otherwise, a harness or verifier process of this run is alive (sampled from /proc every 50 ms; start = kernel creation time, end within 25 ms);
3. **overhead**: everything else: orchestration (the executor's scheduling and polling), storage (artifact downloads and uploads, store reads and writes), tracking (MLflow), and process start-up (every step's, sidecar's and runner's Python, its imports, and the engine's model load).

Overhead is charged to the phase it falls in: a step's node (from its running to its final event, as the executor reports them to `run_experiment`'s view), *engine start* (serve running until its readiness probe passed), *rollout pods* (from the first rollout pod's start to the last one's end, the moments when no model call and no harness runs: proxies and runners starting, waiting for the proxy, outcome uploads), or *executor* (between nodes, and stopping the engine at the end). An iteration's wall time is `time/iteration_s`, the time `run_experiment` spends executing its workflow."""


def section_markdown(info: RunInfo, quickstart: list[Split], sweep: list[SweepPoint], startup: dict[str, tuple[list[str], float]],
                     quickstart_text: str, sweep_text: str, cli_start: CliStart | None = None) -> str:  # fmt: skip
    iterations_s = sum(s.wall_s for s in quickstart)
    load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{info.command}` (the `bench-overhead` make target). Date: {info.date}. Commit: {info.commit}. "
        f"Rollout pods on the `{info.runtime}` runtime. Machine: {info.machine}; "
        f"load average (1, 5, 15 min) {load(info.load_before)} before the run, {load(info.load_after)} after.",
        "",
        _DEFINITION,
        "",
        "### Quickstart: where each iteration's time goes",
        "",
        quickstart_text,
        "",
        *split_table(quickstart),
        "",
        f"The whole `run_experiment` call took {info.quickstart_wall_s:.1f} s: {info.quickstart_wall_s - iterations_s:.1f} s "
        "of it outside the iterations (MLflow set-up in the parent process, the summary).",
        "",
        "Overhead by phase:",
        "",
        *phase_table(quickstart),
        "",
        *pod_table(quickstart),
        "",
        "### Rollouts per minute by concurrency",
        "",
        sweep_text,
        "",
        *sweep_table(sweep),
        "",
        "### Start-up costs, measured apart",
        "",
        "A fresh interpreter importing what each process imports before it does its work (run after the "
        "measurements, on the same machine):",
        "",
        *startup_table(startup),
        "",
        "On the `process` runtime `openforge run` does not pay these per process: it forks every `openforge` "
        "container from a warm-start server that imported all of the above once (docs/executor.md, \"Warm "
        "starts\"); containers started before the server is ready, early in the first iteration, start cold. On "
        "the `sandbox` runtime, the default, a rollout pod's containers (runner and proxy) start cold: the server "
        "forks on the host and cannot enter a pod's namespaces. A warm start of `openforge --help`, from the "
        f"request to the process's exit: {info.warm_start_s:.3f} s (best of 3).",
        "",
        "### Target",
        "",
        *(f"- {line}." for line in verdict_lines(quickstart)),
    ]
    # Last, so that `bench_overhead.py --cli-start` can rewrite it alone (doc_sections.write_subsection).
    tail = "" if cli_start is None else "\n" + subsection_markdown(cli_start)
    return "\n".join(lines) + "\n" + tail


def terminal_lines(quickstart: list[Split], sweep: list[SweepPoint], startup: dict[str, tuple[list[str], float]]) -> list[str]:
    return [
        *split_table(quickstart), "", *phase_table(quickstart), "", *pod_table(quickstart), "",
        *sweep_table(sweep), "", *startup_table(startup), "",
        *(line.replace("**", "") for line in verdict_lines(quickstart)),
    ]  # fmt: skip


@dataclass(frozen=True)
class Breakdown:
    """Everything the section's own part shows (its later subsections are other parts'):
    stored in BREAKDOWN_RESULT, and the section rendered from it alone."""

    info: RunInfo
    quickstart: list[Split]
    sweep: list[SweepPoint]
    startup: dict[str, tuple[list[str], float]]
    quickstart_text: str
    sweep_text: str
    cold_help: CliStart | None = None

    def markdown(self) -> str:
        return section_markdown(self.info, self.quickstart, self.sweep, self.startup, self.quickstart_text,
                                self.sweep_text, self.cold_help)  # fmt: skip


def save_breakdown(breakdown: Breakdown, path: Path = BREAKDOWN_RESULT) -> None:
    from pydantic import TypeAdapter

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(TypeAdapter(Breakdown).dump_json(breakdown, indent=1) + b"\n")


def load_breakdown(path: Path = BREAKDOWN_RESULT) -> Breakdown:
    from pydantic import TypeAdapter

    return TypeAdapter(Breakdown).validate_json(path.read_bytes())
