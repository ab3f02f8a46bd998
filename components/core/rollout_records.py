"""An iteration's recordings, rollout by rollout: what the commit step's readers share.

The rollout traces (components/core/rollout_traces.py) and the behaviour analytics
(components/analytics) both walk the rollouts the iteration's plan names and read each
one's recorded calls (``RunLayout.trajectory``) and outcome (``RunLayout.outcome``); the
reading, and what counts as unreadable, is written here once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall


@dataclass(frozen=True)
class RolloutRecords:
    """One planned rollout's records. ``problem`` says why they cannot be read (then both are empty)."""

    rollout_id: str
    task_id: str
    calls: list[RecordedCall]  # every recorded call, every attempt; [] when none was recorded
    outcome: dict[str, Any] | None  # None when the runner wrote none
    problem: str | None = None


def iteration_records(store: ArtifactStore, layout: RunLayout, iteration: int) -> Iterator[RolloutRecords]:
    """The records of every rollout the iteration's plan names, in plan order (none without a plan)."""
    if not store.exists(layout.plan(iteration)):
        return
    for rollout in json.loads(store.get_bytes(layout.plan(iteration))).get("rollouts", []):
        yield read_rollout(store, layout, iteration, rollout["rollout_id"], rollout["task_id"])


def read_rollout(store: ArtifactStore, layout: RunLayout, iteration: int, rollout_id: str, task_id: str) -> RolloutRecords:
    key, outcome_key = layout.trajectory(iteration, rollout_id), layout.outcome(iteration, rollout_id)
    try:
        lines = store.get_bytes(key).splitlines() if store.exists(key) else []
        calls = [RecordedCall.model_validate_json(line) for line in lines if line.strip()]
        outcome = json.loads(store.get_bytes(outcome_key)) if store.exists(outcome_key) else None
    except ValueError as exc:  # pydantic's ValidationError and JSON errors are ValueErrors
        return RolloutRecords(rollout_id, task_id, [], None, str(exc).splitlines()[0])
    return RolloutRecords(rollout_id, task_id, calls, outcome)
