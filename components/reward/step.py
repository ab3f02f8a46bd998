"""The score step: read the iteration's plan, outcomes and trajectories from the store,
write ``rewards.json`` and the score metrics."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from components.core.config import ExperimentConfig
from components.core.metrics import merge_metrics
from components.core.outcome import Outcome, RewardRecord, RolloutStatus
from components.core.storage import ArtifactStore, run_layout
from components.core.trajectory import TrajectoryError, read_session
from components.reward.control import control_rng, shuffle_within_groups
from components.reward.scoring import Capture, check_choice_misses, inspect_capture, judged_attempt, score_outcomes
from components.reward.stats import GroupStats, TaskStats, group_stats, reason_counts, score_metrics, task_stats


class ScoreReport(BaseModel):
    """The content of ``rewards.json``: the trainer reads ``records``; people read the rest."""

    records: list[RewardRecord]
    # Set under the shuffled-reward control (algorithm.shuffle_rewards), whose records carry
    # permuted rewards: the verifier's reward of every rollout, for whoever reads this file.
    verifier_rewards: dict[str, float] | None = None
    unusable: dict[str, str]  # rollout id -> why training skips it
    unusable_reasons: dict[str, int] = {}  # reason code -> rollouts it made unusable (also metrics unusable/<code>)
    groups: list[GroupStats]
    tasks: list[TaskStats]
    metrics: dict[str, float]


class PlanError(ValueError):
    """A plan.json the score step cannot read; the message names the key and the fix."""


class _Planned(BaseModel):
    """One rollout of plan.json (written by the prepare step); other fields are ignored."""

    rollout_id: str
    task_id: str
    sample_index: int


def _planned_rollouts(raw: bytes, key: str) -> list[_Planned]:
    try:
        entries = json.loads(raw)["rollouts"]
        return [_Planned.model_validate(entry) for entry in entries]
    except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
        raise PlanError(
            f"{key}: not a plan with a 'rollouts' list of {{rollout_id, task_id, sample_index}} ({exc}); "
            "rerun the prepare step"
        ) from None


def _lost_outcome(planned: _Planned, iteration: int, why: str) -> Outcome:
    return Outcome(
        rollout_id=planned.rollout_id,
        task_id=planned.task_id,
        sample_index=planned.sample_index,
        iteration=iteration,
        status=RolloutStatus.INFRA_ERROR,
        details=why,
    )


def _load_outcome(store: ArtifactStore, key: str, planned: _Planned, iteration: int) -> Outcome:
    # A rollout whose pod was lost never wrote its outcome: that is the infrastructure's failure.
    if not store.exists(key):
        return _lost_outcome(planned, iteration, f"no outcome was stored at {key}")
    try:
        return Outcome.model_validate_json(store.get_bytes(key))
    except ValidationError as exc:
        return _lost_outcome(planned, iteration, f"unreadable outcome at {key}: {exc.errors()[0]['msg']}")


def _load_capture(store: ArtifactStore, key: str, scratch: Path, attempt: int | None) -> Capture:
    if not store.exists(key):
        return inspect_capture(None)
    path = scratch / Path(key).name
    path.write_bytes(store.get_bytes(key))
    try:
        return inspect_capture(read_session(path), attempt=attempt)
    except TrajectoryError as exc:
        return inspect_capture(None, read_error=str(exc))


def score_iteration(config: ExperimentConfig, iteration: int, store: ArtifactStore) -> ScoreReport:
    """Score iteration ``iteration``; writes rewards.json and merges the score metrics."""
    layout = run_layout(config)
    plan_key = layout.plan(iteration)
    if not store.exists(plan_key):
        raise PlanError(f"{store.root}/{plan_key} does not exist; run the prepare step of iteration {iteration} first")
    planned = _planned_rollouts(store.get_bytes(plan_key), plan_key)
    outcomes = [_load_outcome(store, layout.outcome(iteration, p.rollout_id), p, iteration) for p in planned]
    with tempfile.TemporaryDirectory(prefix="openforge-score-") as scratch:
        captures = {
            o.rollout_id: _load_capture(store, layout.trajectory(iteration, o.rollout_id), Path(scratch), judged_attempt(o))
            for o in outcomes
        }
    check_choice_misses(outcomes, captures, iteration)
    codes: dict[str, str] = {}
    records, unusable = score_outcomes(outcomes, captures, iteration, codes)
    groups = group_stats(records)
    tasks = task_stats(outcomes, k=config.rollout.samples_per_task)
    # Every statistic comes from the verifier's rewards, before the control touches them.
    metrics = score_metrics(records, outcomes, captures, groups, tasks, codes)
    verifier_rewards = None
    # An evaluation trains nothing: shuffling would only blur its per-rollout rewards.
    if config.algorithm.shuffle_rewards and config.evaluation is None:
        verifier_rewards = {r.rollout_id: r.reward for r in records}
        records = shuffle_within_groups(records, control_rng(config.seed, iteration))
        metrics["control/shuffled_rewards"] = 1.0
    report = ScoreReport(
        records=records, verifier_rewards=verifier_rewards, unusable=unusable, unusable_reasons=reason_counts(codes),
        groups=groups, tasks=tasks, metrics=metrics,
    )  # fmt: skip
    # rewards.json last: its presence is what marks the step done (pipelines/run.py).
    merge_metrics(store, layout.metrics(iteration), metrics)
    store.put_bytes(layout.rewards(iteration), report.model_dump_json(indent=2).encode())
    return report
