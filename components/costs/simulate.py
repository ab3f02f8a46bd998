"""A discrete-event model of training iterations on a cluster: today's order, the straggler cut, overlap.

Its inputs are measured (``simulate_inputs.measured_run`` reads them from a run's cost
records): rollout durations, fitted as a log-normal because harness sessions are
long-tailed; the serve step's start-up; the prepare, score and commit steps; the train
step's time per trained token. What it assumes, each where it is used:

- a rollout takes as long as measured, from its slot freeing (its pod's start included) to
  its end; with ``engine_bound`` the engine serves at most the
  given concurrency per serving GPU (so overlap, which serves on fewer GPUs, runs fewer
  rollouts at once), without it the harness and its tools bound a rollout's time and the
  engine keeps the concurrency on fewer GPUs;
- train time is linear in trained tokens and in 1/GPUs (a perfect speed-up, as
  ``scale.py`` assumes);
- today's order holds all G GPUs for serving, then all G for training; overlap splits
  them, ``serve_gpus`` serving while the rest train;
- every rollout that ends is trained on with the measured tokens per rollout; a cut
  rollout is not;
- on one machine (a local run, ``on_shared_cores``) the rollouts share its cores: each
  keeps about one core busy (runner, proxy sidecar, harness and verifier take turns), so
  beyond as many rollouts as cores they slow down in proportion. A cluster gives each
  rollout its own pod, and the term is not used there.

docs/benchmarks.md, "Iterations at scale, simulated", shows its figures and its check
against a real local run.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class LogNormal:
    """Durations whose logarithm is normal: ``mu`` and ``sigma`` of log seconds."""

    mu: float
    sigma: float

    @classmethod
    def fit(cls, values: list[float]) -> "LogNormal":
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 2:
            raise ValueError(f"fitting rollout durations needs at least 2 positive values, got {len(logs)}")
        return cls(statistics.fmean(logs), statistics.pstdev(logs))

    def quantile(self, q: float) -> float:
        return math.exp(self.mu + self.sigma * statistics.NormalDist().inv_cdf(q))

    def sample(self, rng: random.Random, n: int) -> list[float]:
        return [rng.lognormvariate(self.mu, self.sigma) for _ in range(n)]


@dataclass(frozen=True)
class Measured:
    """One run's timings: what the model scales."""

    durations: LogNormal
    prepare_s: float
    serve_start_s: float  # the serve step's start to its engine answering (the first rollout's start)
    score_s: float
    commit_s: float
    train_s_per_token: float  # on one GPU (or the CPU it was measured on)
    tokens_per_rollout: float
    # Each iteration's time in no step: the engine's stop and the DAG moving from the last
    # rollout to score, and from step to step (a rollout's own pod start is in its duration).
    between_steps_s: float = 0.0


def on_shared_cores(measured: Measured, cores: int, measured_at: int, run_at: int) -> Measured:
    """``measured``, whose rollouts ran ``measured_at`` at once on ``cores`` shared cores, as
    they would take with ``run_at`` at once there: processor sharing, one core a rollout."""
    stretch = max(1.0, run_at / cores) / max(1.0, measured_at / cores)
    durations = LogNormal(measured.durations.mu + math.log(stretch), measured.durations.sigma)
    return replace(measured, durations=durations)


@dataclass(frozen=True)
class Schedule:
    """How iterations follow each other: today's order is ``Schedule("today")``."""

    name: str
    finish_fraction: float = 1.0  # the straggler cut (rollout.finish_fraction)
    grace_s: float = 0.0
    staleness: int = 0  # 1: iteration k+1's rollouts run on checkpoint k while iteration k trains


@dataclass(frozen=True)
class Cluster:
    gpus: int
    concurrency: int  # rollouts at once when serving on all GPUs
    rollouts: int  # per iteration
    iterations: int
    serve_gpus: int = 0  # with overlap: GPUs that serve while the rest train (default half)
    engine_bound: bool = True

    def split(self) -> tuple[int, int]:
        serve = self.serve_gpus or max(1, self.gpus // 2)
        if not 0 < serve < self.gpus:
            raise ValueError(f"overlap needs GPUs for serving and for training: serve_gpus {serve} of {self.gpus}")
        return serve, self.gpus - serve


@dataclass(frozen=True)
class Generation:
    """One iteration's rollouts: when the last one ended (or the cut came), from the engine's start."""

    end_s: float
    finished: int
    cut: int
    active_s: float  # rollout-seconds run (the engine's load over time)


def generate(durations: list[float], concurrency: int, finish_fraction: float = 1.0, grace_s: float = 0.0) -> Generation:
    """Rollouts in plan order, each starting as a slot frees; the cut stops what runs past it."""
    free = [0.0] * min(concurrency, len(durations))
    starts, ends = [], []
    for duration in durations:
        start = heapq.heappop(free)
        starts.append(start)
        ends.append(start + duration)
        heapq.heappush(free, start + duration)
    last = max(ends)
    if finish_fraction >= 1:
        return Generation(last, len(durations), 0, sum(durations))
    needed = max(1, math.ceil(finish_fraction * len(durations) - 1e-9))
    cut_at = min(sorted(ends)[needed - 1] + grace_s, last)
    finished = sum(end <= cut_at for end in ends)
    active = sum(min(end, cut_at) - start for start, end in zip(starts, ends) if start < cut_at)
    return Generation(cut_at, finished, len(durations) - finished, active)


@dataclass
class SimulatedRun:
    """A simulated run of ``cluster.iterations`` iterations."""

    schedule: str
    wall_s: float = 0.0
    finished: int = 0
    cut: int = 0
    trained_tokens: float = 0.0
    gpu_busy_s: float = 0.0
    gpu_s: float = 0.0
    iteration_ends: list[float] = field(default_factory=list)

    @property
    def rollouts_per_hour(self) -> float:
        return self.finished / self.wall_s * 3600

    @property
    def trained_tokens_per_gpu_hour(self) -> float:
        return self.trained_tokens / self.gpu_s * 3600

    @property
    def gpu_busy_share(self) -> float:
        return self.gpu_busy_s / self.gpu_s


def simulate(measured: Measured, cluster: Cluster, schedule: Schedule, seed: int = 0) -> SimulatedRun:
    """One run; serving GPUs count as busy in proportion to the rollouts running (the engine's batch)."""
    rng = random.Random(seed)
    overlap = schedule.staleness > 0
    serve_gpus, train_gpus = cluster.split() if overlap else (cluster.gpus, cluster.gpus)
    concurrency = cluster.concurrency
    if cluster.engine_bound:  # equal load per serving GPU: fewer of them run fewer rollouts at once
        concurrency = max(1, round(cluster.concurrency * serve_gpus / cluster.gpus))
    out = SimulatedRun(schedule.name)
    gen_end, committed = 0.0, [0.0]  # committed[k]: when checkpoint k was ready (0 at the start)
    train_free = 0.0
    for k in range(cluster.iterations):
        # Iteration k serves checkpoint k (today) or k - staleness (overlap), and one engine at a time.
        ready = committed[max(0, k - schedule.staleness)] if overlap else committed[k]
        start = max(ready, gen_end) + measured.prepare_s + measured.serve_start_s
        durations = measured.durations.sample(rng, cluster.rollouts)
        gen = generate(durations, concurrency, schedule.finish_fraction, schedule.grace_s)
        gen_end = start + gen.end_s
        tokens = gen.finished * measured.tokens_per_rollout
        train_s = tokens * measured.train_s_per_token / train_gpus
        train_start = max(gen_end + measured.between_steps_s + measured.score_s, train_free)
        train_free = train_start + train_s
        committed.append(train_free + measured.commit_s)
        out.finished += gen.finished
        out.cut += gen.cut
        out.trained_tokens += tokens
        out.gpu_busy_s += serve_gpus * gen.active_s / concurrency + train_gpus * train_s
        out.iteration_ends.append(committed[-1])
    out.wall_s = committed[-1]
    out.gpu_s = cluster.gpus * out.wall_s
    return out


def mean_run(measured: Measured, cluster: Cluster, schedule: Schedule, runs: int = 20) -> SimulatedRun:
    """The mean of ``runs`` simulated runs (fresh durations each), as one SimulatedRun."""
    outcomes = [simulate(measured, cluster, schedule, seed) for seed in range(runs)]
    mean = SimulatedRun(schedule.name)
    for name in ("wall_s", "finished", "cut", "trained_tokens", "gpu_busy_s", "gpu_s"):
        setattr(mean, name, statistics.fmean(getattr(o, name) for o in outcomes))
    return mean
