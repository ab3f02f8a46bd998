"""What the iteration model (``simulate.py``) takes from a real run: its cost records, read back.

Every step run leaves a cost record with its start, end and wall time (``record.py``);
the rollouts' records give the duration distribution (each from its slot freeing: the gap
before a waiting rollout's start is its pod's start-up), the train step's with the trained
token count its time per token, and the run's wall time less all that the time between
steps. Nothing is filled in: a run without the records or the
token counts the model needs is refused with what is missing.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from components.core.storage import ArtifactStore, RunLayout
from components.costs.aggregate import ROLLOUT, costed_iterations, read_iteration_costs, read_records
from components.costs.simulate import LogNormal, Measured


class MissingTimings(LookupError):
    """A run whose records cannot calibrate the model; the message says what is missing."""


@dataclass(frozen=True)
class MeasuredRun:
    measured: Measured
    iterations: int
    rollouts_per_iteration: int
    concurrency: int
    wall_s: float  # the first step's start to the last step's end, over the iterations read
    rollout_s: list[float]


def measured_run(store: ArtifactStore, layout: RunLayout, concurrency: int) -> MeasuredRun:
    """The timings of every iteration of the run that trained, and its real wall time."""
    iterations = costed_iterations(store, layout)
    costs = [read_iteration_costs(store, layout, k, committed_checkpoint=False) for k in iterations]
    trained = [c for c in costs if c.step("train") and c.tokens_trained]
    if not trained:
        raise MissingTimings(f"{store.root}: no iteration with a train step's cost record and a trained token count")
    durations, serve_starts, pod_starts, spans = [], [], [], []
    for k in iterations:
        records, _ = read_records(store, layout, k)
        rollouts = [r for r in records if r.step == ROLLOUT]
        serve = [r for r in records if r.step == "serve"]
        durations += [r.wall_s for r in rollouts]
        pod_starts += _slot_to_start_s(rollouts, concurrency)
        if rollouts and serve:
            serve_starts.append(min(r.started_at for r in rollouts) - serve[0].started_at)
            spans.append(max(r.ended_at for r in rollouts) - min(r.started_at for r in rollouts))
    if not serve_starts:
        raise MissingTimings(f"{store.root}: no iteration with both a serve and a rollout cost record")

    def mean_wall(step: str) -> float:
        walls = [line.wall_s / line.runs for c in costs if (line := c.step(step))]
        return statistics.fmean(walls) if walls else 0.0

    pod_start = statistics.fmean(pod_starts) if pod_starts else 0.0
    started = min(s.started_at for c in costs for s in c.steps)
    ended = max(s.ended_at for c in costs for s in c.steps if s.step != "serve")  # serve ends when stopped
    in_steps = sum(mean_wall(step) for step in ("prepare", "score", "train", "commit"))
    per_iteration = (ended - started) / len(iterations)
    # The model's rollouts each carry a pod start, the first wave's too (whose start is in serve_start).
    between = per_iteration - in_steps - statistics.fmean(serve_starts) - statistics.fmean(spans) - pod_start

    tokens = sum(c.tokens_trained or 0 for c in trained)
    train_s = sum(c.step("train").wall_s for c in trained)  # type: ignore[union-attr]
    rollouts = sum(c.rollouts for c in trained)
    measured = Measured(
        durations=LogNormal.fit([d + pod_start for d in durations]),
        prepare_s=mean_wall("prepare"),
        serve_start_s=statistics.fmean(serve_starts),
        score_s=mean_wall("score"),
        commit_s=mean_wall("commit"),
        train_s_per_token=train_s / tokens,
        tokens_per_rollout=tokens / rollouts,
        between_steps_s=max(0.0, between),
    )
    return MeasuredRun(
        measured=measured,
        iterations=len(iterations),
        rollouts_per_iteration=round(statistics.fmean(c.rollouts for c in costs)),
        concurrency=concurrency,
        wall_s=ended - started,
        rollout_s=durations,
    )


def _slot_to_start_s(rollouts: list, concurrency: int) -> list[float]:
    """For each rollout that waited for a slot: from the slot freeing to its own start (its pod's
    start-up, which its cost record does not hold). The n-th start after the first ``concurrency``
    takes the slot that the n-th end freed."""
    starts = sorted(r.started_at for r in rollouts)
    ends = sorted(r.ended_at for r in rollouts)
    return [max(0.0, starts[j] - ends[j - concurrency]) for j in range(concurrency, len(starts))]
