"""How much a faster engine could speed up real Claude Code rollouts on this machine.

One evaluation pass (the iteration's DAG without training: only the rollout phase is
measured) of examples/claude-code.yaml's tasks at concurrency ``CONCURRENCY``: real Claude
Code in every rollout, the dev engine in choice mode. While it runs, a sampler reads each
second the machine's busy CPU time (/proc/stat) and the dev engine's ``/health``: its
seconds spent generating (``busy_s``) and its process's CPU seconds (``cpu_s``). Over the
rollout phase (first rollout's start to last one's end, from the cost records):

- *engine busy*: the share of the phase in which the engine was generating;
- *CPU outside the engine*: the machine's busy CPU seconds minus the engine's;
- *bound*: the phase over that CPU spread on every core. An engine that took no time at
  all would still leave the harnesses', proxies', runners' and verifiers' own CPU work to
  this machine's cores, so no engine, batched or not, can make the phase shorter than
  that: the bound is the largest speed-up of rollouts per minute a faster engine can give.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_sections import Stamp
from benchmarks.pipeline_runs import bench_config

SUBSECTION = "Real Claude Code at concurrency 8: what a faster engine could give"
CONCURRENCY = 8
SAMPLES_PER_TASK = 4  # examples/tasks/shell has 4 tasks: 16 rollouts, every slot filled twice
_LISTENING = re.compile(r"dev engine listening on (http://\S+)")
_PERIOD_S = 1.0


@dataclass(frozen=True)
class Sample:
    at: float  # time.time(), as the cost records stamp
    machine_cpu_s: float  # busy CPU seconds of every core since boot
    engine_cpu_s: float
    engine_busy_s: float


@dataclass(frozen=True)
class EngineBound(Stamp):
    rollouts: int
    pass_rate: float | None
    phase_s: float
    engine_busy_s: float
    engine_cpu_s: float
    machine_cpu_s: float
    cores: int

    @property
    def per_minute(self) -> float:
        return self.rollouts / self.phase_s * 60

    @property
    def other_cpu_s(self) -> float:
        return max(self.machine_cpu_s - self.engine_cpu_s, 0.0)

    @property
    def bound(self) -> float:
        """The largest factor by which any engine could raise rollouts per minute here."""
        floor = self.other_cpu_s / self.cores
        return self.phase_s / floor if floor > 0 else float("inf")


def machine_busy_cpu_s(stat: str) -> float:
    """Busy CPU seconds of all cores from /proc/stat's text (everything but idle and iowait)."""
    fields = [int(value) for value in stat.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    # guest time is already counted in user and nice.
    total = sum(fields[:8])
    return (total - idle) / os.sysconf("SC_CLK_TCK")


def interpolate(samples: list[Sample], at: float, field: str) -> float:
    """``field`` at time ``at``, linear between the samples around it (clamped at the ends)."""
    before = [s for s in samples if s.at <= at] or samples[:1]
    after = [s for s in samples if s.at >= at] or samples[-1:]
    a, b = before[-1], after[0]
    x, y = getattr(a, field), getattr(b, field)
    return x if b.at == a.at else x + (y - x) * (at - a.at) / (b.at - a.at)


class _Sampler(threading.Thread):
    """Reads the machine's CPU and the engine's counters each second until stopped."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True, name="engine-bound-sampler")
        self.root = root
        self.samples: list[Sample] = []
        self.problem: str | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        import httpx

        url = None
        while not self._stopping.wait(_PERIOD_S):
            url = url or self._engine_url()
            if url is None:
                continue
            try:
                health = httpx.get(url + "/health", timeout=5).json()
            except (httpx.HTTPError, ValueError) as exc:
                self.problem = f"the engine's /health at {url} did not answer: {exc}"
                url = None  # a later iteration's engine prints its address again
                continue
            machine = machine_busy_cpu_s(Path("/proc/stat").read_text())
            self.samples.append(Sample(time.time(), machine, health["cpu_s"], health["busy_s"]))

    def _engine_url(self) -> str | None:
        for log in self.root.glob("executor/*/*/logs/*serve*/main.log"):
            if found := _LISTENING.search(log.read_text(errors="replace")):
                return found.group(1)
        return None

    def stop(self) -> list[Sample]:
        self._stopping.set()
        self.join()
        return self.samples


def measure(repo: Path, workdir: Path, log) -> tuple[int, float | None, float, float, float, float, int]:
    """One evaluation pass of the Claude Code example with the sampler running beside it:
    ``EngineBound``'s fields after its stamp."""
    import shutil

    from components.core.storage import open_store, run_layout
    from components.costs.aggregate import ROLLOUT, read_records
    from pipelines.evaluate import eval_config, evaluate_policy
    from pipelines.run import DEFAULT_RUNTIME

    root = workdir / "engine-bound"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    overrides = {"rollout.concurrency": CONCURRENCY, "rollout.samples_per_task": SAMPLES_PER_TASK}
    config = eval_config(bench_config(repo / "examples" / "claude-code.yaml", root, overrides), "base", eval_id="bound")
    log(f"claude-code, {SAMPLES_PER_TASK} samples per task at concurrency {CONCURRENCY}, no training")
    sampler = _Sampler(root)
    sampler.start()
    try:
        summary = evaluate_policy(config, workdir=root, runtime=DEFAULT_RUNTIME)
    finally:
        samples = sampler.stop()
    records, _ = read_records(open_store(config.storage.uri), run_layout(config), 0)
    rollouts = [r for r in records if r.step == ROLLOUT]
    start, end = min(r.started_at for r in rollouts), max(r.ended_at for r in rollouts)
    if len(samples) < 2 or samples[0].at > start + 2 * _PERIOD_S:
        raise RuntimeError(f"the sampler missed the rollout phase ({len(samples)} samples): {sampler.problem}")

    def spent(field: str) -> float:
        return interpolate(samples, end, field) - interpolate(samples, start, field)

    return (
        len(rollouts),
        summary.pass_rate,
        end - start,
        spent("engine_busy_s"),
        spent("engine_cpu_s"),
        spent("machine_cpu_s"),
        os.cpu_count() or 1,
    )


def terminal_lines(figures: EngineBound) -> list[str]:
    return [
        f"{figures.rollouts} Claude Code rollouts in {figures.phase_s:.0f} s: {figures.per_minute:.1f} rollouts/min",
        f"engine busy {figures.engine_busy_s / figures.phase_s:.0%} of the phase; "
        f"CPU outside the engine {figures.other_cpu_s:.0f} s on {figures.cores} cores",
        f"no engine could raise rollouts/min by more than {figures.bound:.2f}x here",
    ]


def subsection_markdown(figures: EngineBound) -> str:
    f = figures
    phase = f.phase_s
    return f"""### {SUBSECTION}

{f.stamp_line()}

{f.rollouts} rollouts of `examples/claude-code.yaml`'s tasks (real Claude Code, the dev engine in choice mode, {SAMPLES_PER_TASK} samples per task) at concurrency {CONCURRENCY}, run as an evaluation (the same serve step, rollout pods and verifiers, no training); pass rate {_rate(f.pass_rate)}. While it ran, the machine's busy CPU time (/proc/stat) and the dev engine's `/health` counters (`busy_s`: seconds generating; `cpu_s`: its process's CPU) were read each second; the figures cover the rollout phase (first rollout's start to last one's end).

| rollout phase | rollouts/min | engine generating | engine CPU | CPU outside the engine | phase with an instant engine, at least | bound on any engine's gain |
|---:|---:|---:|---:|---:|---:|---:|
| {phase:.0f} s | {f.per_minute:.1f} | {f.engine_busy_s:.0f} s ({f.engine_busy_s / phase:.0%}) | {f.engine_cpu_s:.0f} s | {f.other_cpu_s:.0f} s | {f.other_cpu_s / f.cores:.0f} s ({f.cores} cores) | {f.bound:.2f}x |

Reading it: an engine that answered every call at once would still leave the CPU work outside it (Claude Code's own Node.js process, the recording proxy, the runner and the verifier of each rollout, and the sandbox's start) to this machine's {f.cores} cores, so the rollout phase could not end sooner than that work spread over every core. The last column is therefore the most any engine, batched or not, could raise rollouts per minute of real Claude Code here. Over the phase the machine's cores were {f.machine_cpu_s / (phase * f.cores):.0%} busy, the engine's share of that CPU {f.engine_cpu_s / max(f.machine_cpu_s, 1e-9):.0%}: a batching engine saves its own CPU, never the harnesses'.
"""


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
