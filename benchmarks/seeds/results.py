"""The raw results of a seeded learning benchmark: one JSON file per arm and seed.

A seed's run is stored the moment it finishes, each rollout as the verifier graded it
(task, reward, passed, iteration), so the benchmark resumes seed by seed and can span
sessions. The doc section is rendered from these files alone: a figure that is not in
them cannot reach the doc.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from components.core.metrics import read_metrics
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import ArtifactStore, RunLayout
from components.reward.scoring import GRADED_STATUSES


class Arm(str, Enum):
    """The real run learns from the verifier's rewards; the control from the same rewards
    permuted within each group (``algorithm.shuffle_rewards``)."""

    REAL = "real"
    CONTROL = "control"


class GradedRollout(BaseModel):
    task_id: str
    reward: float  # the verifier's, never the control's permuted one
    passed: bool


class IterationResult(BaseModel):
    iteration: int
    rollouts: list[GradedRollout]  # graded ones only (rollout-id order): infrastructure failures say nothing of the policy
    trained_tokens: float | None  # batch/trained_tokens of the update that followed
    wall_s: float | None  # time/iteration_s
    train: dict[str, float] = {}  # the update's train/* metrics (loss, grad norm, entropy, ...)
    steps: dict[str, float] = {}  # seconds per step, from the executor's node events (harness_learning/curve.py)

    @property
    def pass_rate(self) -> float | None:
        return statistics.fmean(r.passed for r in self.rollouts) if self.rollouts else None

    @property
    def reward_mean(self) -> float | None:
        return statistics.fmean(r.reward for r in self.rollouts) if self.rollouts else None


class SeedRun(BaseModel):
    """One arm of one seed: the run's seed and ``model.tiny_seed`` are both ``seed``."""

    arm: Arm
    seed: int
    commit: str
    date: str
    machine: str
    wall_s: float  # the whole run_experiment call
    iterations: list[IterationResult]

    def curve(self, quantity: str) -> list[float | None]:
        """``pass_rate`` or ``reward_mean`` by iteration."""
        return [getattr(point, quantity) for point in self.iterations]

    def rise(self, quantity: str) -> float | None:
        """The last iteration's value less the first's."""
        first, last = self.iterations[0], self.iterations[-1]
        a, b = getattr(first, quantity), getattr(last, quantity)
        return None if a is None or b is None else b - a

    def window_gain(self, quantity: str, window: int) -> float | None:
        """The mean per-rollout ``reward`` or ``passed`` of the last ``window`` iterations less
        that of the first ``window``: a steadier gain than one iteration's against another's."""
        def mean(points: list[IterationResult]) -> float | None:
            values = [float(getattr(r, quantity)) for p in points for r in p.rollouts]
            return statistics.fmean(values) if values else None

        a, b = mean(self.iterations[:window]), mean(self.iterations[-window:])
        return None if a is None or b is None else b - a


def graded_rollouts(store: ArtifactStore, layout: RunLayout, iteration: int) -> list[GradedRollout]:
    """The graded rollouts of ``iteration`` (rollout-id order): the verifier's reward and verdict
    of each. An infrastructure failure says nothing of the policy and is left out."""
    report = json.loads(store.get_bytes(layout.rewards(iteration)))
    # Under the control the records carry permuted rewards; verifier_rewards keeps the true ones.
    truth = report.get("verifier_rewards") or {}
    graded = sorted(
        (r for r in report["records"] if RolloutStatus(r["status"]) in GRADED_STATUSES), key=lambda r: r["rollout_id"]
    )
    out = []
    for record in graded:
        outcome = Outcome.model_validate_json(store.get_bytes(layout.outcome(iteration, record["rollout_id"])))
        out.append(
            GradedRollout(
                task_id=record["task_id"],
                reward=truth.get(record["rollout_id"], record["reward"]),
                passed=outcome.status is RolloutStatus.OK and bool(outcome.passed),
            )
        )
    return out


def read_iterations(
    store: ArtifactStore,
    name: str,
    logged: Mapping[int, Mapping[str, float]],
    steps: Mapping[int, dict[str, float]] | None = None,
) -> list[IterationResult]:
    """Every logged iteration of run ``name``, its graded rollouts read back from the store;
    ``steps``: each iteration's seconds per step, where they were measured."""
    layout = RunLayout(name)
    out = []
    for iteration in sorted(logged):
        metrics = read_metrics(store, layout.metrics(iteration))
        out.append(
            IterationResult(
                iteration=iteration,
                rollouts=graded_rollouts(store, layout, iteration),
                trained_tokens=metrics.get("batch/trained_tokens"),
                wall_s=logged[iteration].get("time/iteration_s"),
                train={k: v for k, v in metrics.items() if k.startswith("train/")},
                steps=(steps or {}).get(iteration, {}),
            )
        )
    return out


def run_path(folder: Path, arm: Arm, seed: int) -> Path:
    return folder / f"{arm.value}-seed-{seed}.json"


def save_run(folder: Path, run: SeedRun) -> Path:
    path = run_path(folder, run.arm, run.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(run.model_dump(mode="json"), separators=(",", ":")) + "\n")
    tmp.replace(path)  # never a half-written file to resume from
    return path


def stored_runs(folder: Path) -> dict[Arm, dict[int, SeedRun]]:
    """Every stored run in ``folder``, by arm and seed."""
    out: dict[Arm, dict[int, SeedRun]] = {arm: {} for arm in Arm}
    for path in sorted(folder.glob("*-seed-*.json")):
        run = SeedRun.model_validate_json(path.read_text())
        if path != run_path(folder, run.arm, run.seed):
            raise ValueError(f"{path} holds arm {run.arm.value} seed {run.seed}: rename it or delete it")
        out[run.arm][run.seed] = run
    return out
