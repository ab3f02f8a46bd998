"""Split one iteration's wall time into model, harness and overhead (everything else).

Each moment of the iteration goes to exactly one bucket, in this order:

1. **model**: a model call is in flight (from the proxy receiving it until its answer
   is complete, as the proxy recorded it), or the trainer is computing its update
   (forward, backward, optimizer step; timed apart, see ``probes.update_seconds``).
2. **harness**: otherwise, a harness or verifier process of this run is alive.
3. **overhead**: the rest: orchestration (the executor's scheduling and waiting),
   storage (artifact uploads and downloads, store reads and writes), tracking (MLflow),
   and process start-up (every step's, sidecar's and the engine's interpreter, imports
   and model load).

Overhead is then charged to the phase it happened in: a step's node, the engine's
start (serve running until ready), the rollout fan-out (pods starting, proxies and
runners starting, outcome uploads: the parts of the fan-out where no model call and no
harness runs), or "executor" (between nodes, and stopping the engine at the end).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from benchmarks.overhead.intervals import Interval, Intervals, clip, intersect, subtract, total, union
from benchmarks.overhead.probes import IterationEvents

STEP_PHASES = ("prepare", "score", "train", "commit")
ENGINE_START = "engine start"
ROLLOUTS = "rollout pods"
EXECUTOR = "executor"
PHASES = ("prepare", ENGINE_START, ROLLOUTS, "score", "train", "commit", EXECUTOR)
_FINAL = {"succeeded", "failed", "skipped", "omitted"}


@dataclass(frozen=True)
class Split:
    iteration: int
    wall_s: float
    engine_calls_s: float  # union of in-flight model calls
    update_s: float
    harness_s: float  # harness or verifier alive, no model call in flight
    overhead_by_phase: dict[str, float]
    rollouts: int
    rollout_phase_s: float  # first rollout pod started .. last one ended
    pod_s: list[float] = field(default_factory=list)  # each rollout pod's lifetime
    harness_lifetimes_s: list[float] = field(default_factory=list)
    verifier_lifetimes_s: list[float] = field(default_factory=list)
    calls: int = 0
    call_latency_s: float = 0.0  # summed over calls (they overlap: the engine queues them)

    @property
    def model_s(self) -> float:
        return self.engine_calls_s + self.update_s

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.model_s - self.harness_s

    @property
    def overhead_share(self) -> float:
        return self.overhead_s / self.wall_s

    @property
    def rollouts_per_minute(self) -> float:
        return 60 * self.rollouts / self.rollout_phase_s if self.rollout_phase_s > 0 else 0.0


def _leaf(node: str) -> str:
    """A node's name within its own DAG: ``generate.rollout(3)`` -> ``rollout(3)``.

    Nested DAGs prefix their nodes with the parent's name and a dot; a fan-out's item may
    hold dots of its own, so only the part before its parenthesis is split.
    """
    head, paren, rest = node.partition("(")
    return head.rsplit(".", 1)[-1] + paren + rest


def node_spans(events: IterationEvents) -> dict[str, tuple[float, float, float | None]]:
    """node (named within its DAG) -> (started, ended, ready); ``ready``: a daemon passed its probe."""
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    ready: dict[str, float] = {}
    for event in (replace(e, node=_leaf(e.node)) for e in events.events):
        if event.phase == "running":
            started.setdefault(event.node, event.at)
        elif event.phase == "daemoned":
            ready.setdefault(event.node, event.at)
        elif event.phase in _FINAL:
            ended.setdefault(event.node, event.at)
            started.setdefault(event.node, event.at)  # skipped and omitted nodes never ran
    return {node: (started[node], ended.get(node, started[node]), ready.get(node)) for node in started}


def _is_rollout_pod(node: str) -> bool:
    return node.startswith("rollout(") and node.endswith(")")


def split_iteration(
    iteration: int,
    events: IterationEvents,
    wall_s: float,
    call_spans: list[Interval],
    processes: dict[str, list[Interval]],
    update_s: float,
) -> Split:
    """Split ``[events.started, events.started + wall_s]`` into the buckets of the module docstring."""
    low, high = events.started, events.started + wall_s
    window: Intervals = [(low, high)]
    own_calls = clip(call_spans, low, high)
    calls = union(own_calls)
    harness_or_verifier = intersect([s for spans in processes.values() for s in spans], window)
    busy = union(calls + harness_or_verifier)
    spans = node_spans(events)

    pods = {n: s for n, s in spans.items() if _is_rollout_pod(n)}
    rollout_phase = [(min(s[0] for s in pods.values()), max(s[1] for s in pods.values()))] if pods else []
    phases: dict[str, Intervals] = {step: [spans[step][:2]] for step in STEP_PHASES if step in spans}
    serve = spans.get("serve")
    if serve is not None:
        phases[ENGINE_START] = [(serve[0], serve[2] if serve[2] is not None else serve[1])]
    phases[ROLLOUTS] = rollout_phase

    overhead = {p: total(subtract(intersect(phases.get(p, []), window), busy)) for p in PHASES if p != EXECUTOR}
    # The update ran inside the train node: that part of the node is model time.
    overhead["train"] = max(0.0, overhead["train"] - update_s)
    covered = union(busy + [s for spans_ in phases.values() for s in spans_])
    overhead[EXECUTOR] = total(subtract(window, covered))

    return Split(
        iteration=iteration,
        wall_s=wall_s,
        engine_calls_s=total(calls),
        update_s=update_s,
        harness_s=total(subtract(harness_or_verifier, calls)),
        overhead_by_phase=overhead,
        rollouts=len(pods),
        rollout_phase_s=total(rollout_phase),
        pod_s=[end - start for start, end, _ in pods.values()],
        harness_lifetimes_s=[e - s for s, e in clip(processes.get("harness", []), low, high)],
        verifier_lifetimes_s=[e - s for s, e in clip(processes.get("verifier", []), low, high)],
        calls=len(own_calls),
        call_latency_s=sum(e - s for s, e in own_calls),
    )

