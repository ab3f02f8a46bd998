"""Group statistics, pass@k / pass^k per task and overall, and the iteration's score metrics."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Mapping, Sequence

from pydantic import BaseModel, Field

from components.core.outcome import Outcome, RewardRecord, RolloutStatus
from components.reward.passk import pass_at_k, pass_hat_k
from components.reward.scoring import GRADED_STATUSES, Capture


class GroupStats(BaseModel):
    """One GRPO group: the usable rollouts of a task that training compares with each other."""

    group_id: str
    task_id: str
    size: int = Field(description="Usable rollouts in the group.")
    reward_mean: float | None
    reward_std: float | None = Field(description="Sample std (n-1), as GRPO's advantage uses; None below 2.")
    skipped_equal: bool = Field(description="All usable rewards equal (a lone rollout included): no learning signal.")
    no_baseline: bool = Field(
        False, description="More than one rollout planned but fewer than 2 usable: masked whole (no GRPO baseline)."
    )


class TaskStats(BaseModel):
    """Success of one task over its graded rollouts (infra and verifier errors excluded)."""

    task_id: str
    n: int
    passed: int
    pass_at_1: float | None
    pass_at_k: float | None = Field(description="None when fewer than k rollouts were graded.")
    pass_hat_k: float | None = Field(description="None when fewer than k rollouts were graded.")
    cut: int = Field(0, description="Rollouts stopped by the straggler cut (rollout.finish_fraction): not graded.")


def group_stats(records: Sequence[RewardRecord]) -> list[GroupStats]:
    """Statistics per group, over usable rollouts; groups with none usable are listed with size 0."""
    rewards: dict[str, list[float]] = defaultdict(list)
    task_of: dict[str, str] = {}
    planned: dict[str, int] = defaultdict(int)
    for record in records:
        task_of[record.group_id] = record.task_id
        planned[record.group_id] += 1
        if record.usable:
            rewards[record.group_id].append(record.reward)
    out = []
    for gid in sorted(task_of):
        values = rewards[gid]
        out.append(
            GroupStats(
                group_id=gid,
                task_id=task_of[gid],
                size=len(values),
                reward_mean=statistics.fmean(values) if values else None,
                reward_std=statistics.stdev(values) if len(values) > 1 else None,
                skipped_equal=bool(values) and len(set(values)) == 1,
                no_baseline=planned[gid] > 1 and len(values) < 2,
            )
        )
    return out


def task_stats(outcomes: Sequence[Outcome], k: int) -> list[TaskStats]:
    """pass@1, pass@k and pass^k per task, with the unbiased estimators."""
    graded: dict[str, list[bool]] = defaultdict(list)
    cut: dict[str, int] = defaultdict(int)
    for outcome in outcomes:
        graded.setdefault(outcome.task_id, [])
        cut[outcome.task_id] += outcome.status is RolloutStatus.CUT
        if outcome.status in GRADED_STATUSES:
            graded[outcome.task_id].append(outcome.status is RolloutStatus.OK and bool(outcome.passed))
    out = []
    for task_id in sorted(graded):
        n, c = len(graded[task_id]), sum(graded[task_id])
        enough = n >= k
        out.append(
            TaskStats(
                task_id=task_id,
                n=n,
                passed=c,
                pass_at_1=pass_at_k(n, c, 1) if n else None,
                pass_at_k=pass_at_k(n, c, k) if enough else None,
                pass_hat_k=pass_hat_k(n, c, k) if enough else None,
                cut=cut[task_id],
            )
        )
    return out


def _mean_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _percentile(values: list[float], q: float) -> float:
    # Linear interpolation between closest ranks (numpy's default), without numpy.
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def score_metrics(
    records: Sequence[RewardRecord],
    outcomes: Sequence[Outcome],
    captures: Mapping[str, Capture],
    groups: Sequence[GroupStats],
    tasks: Sequence[TaskStats],
    unusable_codes: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """The contract's score metrics. A metric with no data (e.g. pass@k when no task has k
    graded rollouts) is left out rather than logged as a misleading 0."""
    metrics: dict[str, float] = {}
    graded_rewards = [r.reward for r in records if r.status in GRADED_STATUSES]
    if graded_rewards:
        metrics["reward/mean"] = statistics.fmean(graded_rewards)
        metrics["reward/std"] = statistics.pstdev(graded_rewards)
    for name, value in (
        ("pass@1", _mean_of([t.pass_at_1 for t in tasks])),
        ("pass@k", _mean_of([t.pass_at_k for t in tasks])),
        ("pass^k", _mean_of([t.pass_hat_k for t in tasks])),
    ):
        if value is not None:
            metrics[name] = value
    for status in RolloutStatus:
        metrics[f"rollouts/{status.value}"] = float(sum(o.status is status for o in outcomes))
    metrics["rollouts/total"] = float(len(outcomes))
    metrics["rollouts/usable"] = float(sum(r.usable for r in records))
    metrics["tokens/sampled"] = float(sum(c.sampled_tokens for c in captures.values()))
    metrics["tokens/forced"] = float(sum(c.forced_tokens for c in captures.values()))
    choice_calls = sum(c.choice_calls for c in captures.values())
    if choice_calls:  # choice mode only: a sampling run has no book to miss
        metrics["engine/choice_calls"] = float(choice_calls)
        metrics["engine/choice_misses"] = float(sum(c.choice_misses for c in captures.values()))
    # Outcomes that scoring made up for rollouts that never reported have no duration.
    durations = [o.duration_s for o in outcomes if o.duration_s > 0]
    if durations:
        metrics["rollout_time_s/p50"] = _percentile(durations, 0.5)
        metrics["rollout_time_s/p95"] = _percentile(durations, 0.95)
    metrics["groups/total"] = float(len(groups))
    metrics["groups/skipped_equal"] = float(sum(g.skipped_equal for g in groups))
    metrics["groups/no_baseline"] = float(sum(g.no_baseline for g in groups))
    for code, count in sorted(reason_counts(unusable_codes or {}).items()):
        metrics[f"unusable/{code}"] = float(count)
    return metrics


def reason_counts(codes: Mapping[str, str]) -> dict[str, int]:
    """How many unusable rollouts each reason code accounts for."""
    counts: dict[str, int] = defaultdict(int)
    for code in codes.values():
        counts[code] += 1
    return dict(counts)
