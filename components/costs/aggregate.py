"""An iteration's cost records read back and summed per step, beside its tokens and stored bytes.

Nothing is skipped silently: an unreadable record is named, and every rollout whose
outcome is in the store without a cost record is counted.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pydantic import BaseModel, ConfigDict, ValidationError

from components.core.metrics import read_metrics
from components.core.storage import ArtifactStore, RunLayout, StorageError
from components.costs.record import CostRecord

ROLLOUT = "rollout"
# The steps every iteration runs once, besides serve and the rollouts (which run only when rollouts are left).
_TRAINING_STEPS = ("prepare", "score", "train", "commit")
_EVALUATION_STEPS = ("prepare", "score", "report")
# The score and train steps' metrics (components/reward/stats.py, components/trainer/batch.py).
SAMPLED_TOKENS = "tokens/sampled"
TRAINED_TOKENS = "batch/trained_tokens"


class NoCostRecords(LookupError):
    """The store holds no cost record for what was asked; the message says why and what to run."""


class StepCosts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str
    runs: int
    failed: int  # runs that exited non-zero
    wall_s: float  # summed over the runs
    cpu_s: float
    gpu_s: float
    gpus: int  # the most any one run held
    started_at: float
    ended_at: float


class IterationCosts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iteration: int
    steps: list[StepCosts]
    tokens_sampled: float | None  # None: the score step wrote no token count
    tokens_trained: float | None  # None: no train step (an evaluation) or it wrote no count
    iteration_bytes: int  # the iteration's own objects: plan, trajectories, outcomes, batch, ...
    checkpoint_bytes: int  # the checkpoint it committed (K+1); 0 for an evaluation
    rollouts_without_record: int
    steps_without_record: list[str]  # steps the iteration runs that left none (not run yet, or the write failed)
    unreadable: list[str]

    def step(self, name: str) -> StepCosts | None:
        return next((s for s in self.steps if s.step == name), None)

    @property
    def rollouts(self) -> int:
        rollout = self.step(ROLLOUT)
        return rollout.runs if rollout else 0

    @property
    def cpu_s(self) -> float:
        return sum(s.cpu_s for s in self.steps)

    @property
    def gpu_s(self) -> float:
        return sum(s.gpu_s for s in self.steps)

    @property
    def stored_bytes(self) -> int:
        return self.iteration_bytes + self.checkpoint_bytes

    @property
    def wall_s(self) -> float:
        """First start to last end: the iteration's elapsed time, not a sum over parallel pods."""
        return max(s.ended_at for s in self.steps) - min(s.started_at for s in self.steps)


def _iterations_folder(layout: RunLayout) -> str:
    return layout.costs(0).rsplit("/", 2)[0]


def _parent(key: str) -> str:
    return key.rsplit("/", 1)[0]


def costed_iterations(store: ArtifactStore, layout: RunLayout) -> list[int]:
    """The iterations that have at least one cost record, in order."""
    folder = _iterations_folder(layout)
    found = re.compile(re.escape(folder) + r"/(\d+)/costs/")
    return sorted({int(m[1]) for key in store.list(folder + "/") if (m := found.match(key))})


def read_records(store: ArtifactStore, layout: RunLayout, iteration: int) -> tuple[list[CostRecord], list[str]]:
    """The iteration's records, and the keys of those that could not be read."""
    records, unreadable = [], []
    for key in store.list(layout.costs(iteration) + "/"):
        try:
            records.append(CostRecord.model_validate_json(store.get_bytes(key)))
        except (StorageError, ValidationError) as exc:
            unreadable.append(f"{key}: {str(exc).splitlines()[0]}")
    return records, unreadable


def sum_steps(records: list[CostRecord]) -> list[StepCosts]:
    """One line per step, in the order the steps started."""
    by_step: dict[str, list[CostRecord]] = defaultdict(list)
    for record in records:
        by_step[record.step].append(record)
    lines = [
        StepCosts(
            step=step,
            runs=len(runs),
            failed=sum(r.exit_code != 0 for r in runs),
            wall_s=sum(r.wall_s for r in runs),
            cpu_s=sum(r.cpu_s for r in runs),
            gpu_s=sum(r.gpu_s for r in runs),
            gpus=max(r.gpus for r in runs),
            started_at=min(r.started_at for r in runs),
            ended_at=max(r.ended_at for r in runs),
        )
        for step, runs in by_step.items()
    ]
    return sorted(lines, key=lambda line: line.started_at)


def read_iteration_costs(store: ArtifactStore, layout: RunLayout, iteration: int, committed_checkpoint: bool) -> IterationCosts:
    """Iteration ``iteration``'s costs; ``committed_checkpoint``: it trained, so checkpoint K+1 is its too."""
    records, unreadable = read_records(store, layout, iteration)
    if not records:
        raise NoCostRecords(f"iteration {iteration} has no cost record under {store.root}/{layout.costs(iteration)}/")
    metrics = read_metrics(store, layout.metrics(iteration))
    outcomes = store.list(layout.outcomes(iteration))
    recorded = {layout.outcome(iteration, r.part) for r in records if r.step == ROLLOUT and r.part}
    missing = set(outcomes) - recorded
    expected = [*(_EVALUATION_STEPS if layout.evaluation else _TRAINING_STEPS), *(("serve",) if outcomes else ())]
    steps = sum_steps(records)
    checkpoint = store.sizes(layout.checkpoint(iteration + 1)) if committed_checkpoint else {}
    return IterationCosts(
        iteration=iteration,
        steps=steps,
        tokens_sampled=metrics.get(SAMPLED_TOKENS),
        tokens_trained=metrics.get(TRAINED_TOKENS),
        iteration_bytes=sum(store.sizes(_parent(layout.plan(iteration))).values()),
        checkpoint_bytes=sum(checkpoint.values()),
        rollouts_without_record=len(missing),
        steps_without_record=sorted(set(expected) - {line.step for line in steps}),
        unreadable=unreadable,
    )
