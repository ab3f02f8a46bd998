"""An evaluation's results from its scored rollouts: per task and overall, pass@k for every k.

Pass rate, mean reward and pass@k count *graded* rollouts (the verifier judged them or the
agent failed on its own: the statuses of ``GRADED_STATUSES``); an infrastructure or
verifier error says nothing about the policy and is only counted in ``status_counts``.
pass@k uses the unbiased estimator (components/reward/passk.py) for k = 1 .. samples, and
is left out (None) for a task with fewer than k graded rollouts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel, Field

from components.core.outcome import RewardRecord, RolloutStatus
from components.reward.passk import pass_at_k
from components.reward.scoring import GRADED_STATUSES
from components.reward.stats import TaskStats


class TaskSummary(BaseModel):
    task_id: str
    rollouts: int = Field(description="Rollouts planned for the task.")
    graded: int = Field(description="Rollouts that say something about the policy (see the module doc).")
    passed: int
    pass_rate: float | None = Field(description="passed / graded; None when none was graded.")
    reward_mean: float | None = Field(description="Mean reward over graded rollouts.")
    pass_at: dict[int, float | None] = Field(description="pass@k by k; None when fewer than k were graded.")


class EvalSummary(BaseModel):
    """What `openforge eval` writes to ``<name>/evals/<id>/summary.json`` and logs under ``eval/``."""

    experiment: str
    eval_id: str
    checkpoint: dict = Field(description="What the serve step served: requested, version, source.")
    task_source: str
    samples_per_task: int
    tasks: list[TaskSummary]
    pass_rate: float | None = Field(description="Mean of the tasks' pass rates.")
    reward_mean: float | None = Field(description="Mean reward over every graded rollout.")
    pass_at: dict[int, float | None] = Field(description="Mean over tasks of pass@k, by k.")
    status_counts: dict[str, int] = Field(description="Rollouts by status, every status listed.")

    def metrics(self) -> dict[str, float]:
        """Flat numbers for MLflow (the caller adds the `eval/` prefix); absent values are left out."""
        out: dict[str, float] = {f"rollouts/{status}": float(n) for status, n in self.status_counts.items()}
        overall = {"pass_rate": self.pass_rate, "reward/mean": self.reward_mean}
        overall.update({f"pass@{k}": v for k, v in self.pass_at.items()})
        for task in self.tasks:
            overall[f"task/{task.task_id}/pass_rate"] = task.pass_rate
            overall[f"task/{task.task_id}/reward_mean"] = task.reward_mean
        out.update({name: float(v) for name, v in overall.items() if v is not None})
        return out


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def summarize_tasks(records: Sequence[RewardRecord], tasks: Sequence[TaskStats], samples: int) -> list[TaskSummary]:
    """One summary per task, from the score step's records and per-task pass counts."""
    out = []
    for task in tasks:
        mine = [r for r in records if r.task_id == task.task_id]
        rewards = [r.reward for r in mine if r.status in GRADED_STATUSES]
        out.append(
            TaskSummary(
                task_id=task.task_id,
                rollouts=len(mine),
                graded=task.n,
                passed=task.passed,
                pass_rate=task.passed / task.n if task.n else None,
                reward_mean=statistics.fmean(rewards) if rewards else None,
                pass_at={k: pass_at_k(task.n, task.passed, k) if task.n >= k else None for k in range(1, samples + 1)},
            )
        )
    return out


def status_counts(records: Sequence[RewardRecord]) -> dict[str, int]:
    return {status.value: sum(r.status is status for r in records) for status in RolloutStatus}


def summarize_evaluation(
    records: Sequence[RewardRecord], tasks: Sequence[TaskStats], samples: int, **about: object
) -> EvalSummary:
    """The whole summary; ``about`` names the evaluation (experiment, eval_id, checkpoint, task_source)."""
    per_task = summarize_tasks(records, tasks, samples)
    graded = [r.reward for r in records if r.status in GRADED_STATUSES]
    return EvalSummary(
        **about,
        samples_per_task=samples,
        tasks=per_task,
        pass_rate=_mean([t.pass_rate for t in per_task]),
        reward_mean=statistics.fmean(graded) if graded else None,
        pass_at={k: _mean([t.pass_at[k] for t in per_task]) for k in range(1, samples + 1)},
        status_counts=status_counts(records),
    )
