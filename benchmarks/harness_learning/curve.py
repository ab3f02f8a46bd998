"""Where one run's iterations went: the verifier's verdicts of its graded rollouts, and each
iteration's wall time split by step from the executor's node events.

Pass rates come from the rollouts' outcomes (the verifier's ``passed``), never from the
records the trainer read: under the shuffled-reward control those carry permuted rewards.
"""

from __future__ import annotations

from benchmarks.overhead.breakdown import node_spans
from benchmarks.overhead.probes import IterationEvents
from benchmarks.seeds.results import graded_rollouts
from components.core.storage import ArtifactStore, RunLayout

# Where an iteration's wall time goes, as the executor's node events show it.
STEPS = ("prepare", "serve start", "rollouts", "score", "train", "commit")
OTHER = "other"  # between nodes: the executor's scheduling, MLflow, stopping the engine


def verdicts(store: ArtifactStore, layout: RunLayout, iteration: int) -> list[bool]:
    """Whether the verifier passed each graded rollout of ``iteration`` (rollout-id order)."""
    return [rollout.passed for rollout in graded_rollouts(store, layout, iteration)]


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
