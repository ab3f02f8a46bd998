"""Read one run back: each iteration's verifier verdicts, rewards, trained tokens and step times.

Pass rates come from the rollouts' outcomes (the verifier's ``passed``), never from the
records the trainer read: under the shuffled-reward control those carry permuted rewards.
A rollout counts when it was *graded* (the verifier judged it, or the agent failed on its
own); an infrastructure failure says nothing about the policy and is left out.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass

from benchmarks.overhead.breakdown import node_spans
from benchmarks.overhead.probes import IterationEvents
from components.core.metrics import read_metrics
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import ArtifactStore, RunLayout
from components.reward.scoring import GRADED_STATUSES

# Where an iteration's wall time goes, as the executor's node events show it.
STEPS = ("prepare", "serve start", "rollouts", "score", "train", "commit")
OTHER = "other"  # between nodes: the executor's scheduling, MLflow, stopping the engine


@dataclass(frozen=True)
class HarnessIteration:
    iteration: int
    passed: list[bool]  # one per graded rollout
    reward_mean: float | None  # reward/mean: the verifier's, over graded rollouts
    trained_tokens: float | None  # batch/trained_tokens
    wall_s: float | None  # time/iteration_s
    step_s: dict[str, float]  # STEPS and OTHER; empty when no events were recorded

    @property
    def pass_rate(self) -> float:
        return statistics.fmean(self.passed) if self.passed else math.nan

    @property
    def stderr(self) -> float:
        n = len(self.passed)
        return statistics.stdev(self.passed) / math.sqrt(n) if n > 1 else math.nan


def verdicts(store: ArtifactStore, layout: RunLayout, iteration: int) -> list[bool]:
    """Whether the verifier passed each graded rollout of ``iteration`` (rollout-id order)."""
    records = json.loads(store.get_bytes(layout.rewards(iteration)))["records"]
    graded = sorted(r["rollout_id"] for r in records if RolloutStatus(r["status"]) in GRADED_STATUSES)
    out = []
    for rollout_id in graded:
        outcome = Outcome.model_validate_json(store.get_bytes(layout.outcome(iteration, rollout_id)))
        out.append(outcome.status is RolloutStatus.OK and bool(outcome.passed))
    return out


def step_seconds(events: IterationEvents, wall_s: float) -> dict[str, float]:
    """Seconds per step of one iteration, from the times its node events arrived.

    The pipeline records no per-step durations (only the iteration's and the rollouts'),
    so they are measured from outside: a step node's span, the engine from its start to
    its readiness, the rollouts from the first pod's start to the last pod's end.
    """
    spans = node_spans(events)
    out = {step: spans[step][1] - spans[step][0] for step in ("prepare", "score", "train", "commit") if step in spans}
    serve = spans.get("serve")
    if serve is not None and serve[2] is not None:
        out["serve start"] = serve[2] - serve[0]
    pods = [span for node, span in spans.items() if node.startswith("rollout(")]
    if pods:
        out["rollouts"] = max(end for _, end, _ in pods) - min(start for start, _, _ in pods)
    out[OTHER] = max(0.0, wall_s - sum(out.values()))
    return out


def read_run(
    store: ArtifactStore, name: str, logged: dict[int, dict[str, float]], events: dict[int, IterationEvents]
) -> list[HarnessIteration]:
    """Every logged iteration of run ``name``; ``events`` (by iteration) may lack some."""
    layout = RunLayout(name)
    points = []
    for iteration in sorted(logged):
        metrics = read_metrics(store, layout.metrics(iteration))
        wall = logged[iteration].get("time/iteration_s")
        timed = events.get(iteration)
        points.append(
            HarnessIteration(
                iteration=iteration,
                passed=verdicts(store, layout, iteration),
                reward_mean=metrics.get("reward/mean"),
                trained_tokens=metrics.get("batch/trained_tokens"),
                wall_s=wall,
                step_s=step_seconds(timed, wall) if timed is not None and wall is not None else {},
            )
        )
    return points
