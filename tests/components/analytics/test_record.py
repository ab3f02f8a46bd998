"""The analytics read from a store and written back as ``RunLayout.analytics(k)``."""

from __future__ import annotations

import json
from pathlib import Path

from components.analytics import read_analytics, record_analytics
from components.core.storage import LocalStore, RunLayout
from tests.components.analytics._trajectories import chat_rollout, outcome


def _iteration(store: LocalStore, layout: RunLayout, iteration: int, rollouts: dict[str, list]) -> None:
    plan = {"rollouts": [{"rollout_id": rid, "task_id": rid.rpartition("-s")[0]} for rid in rollouts]}
    store.put_bytes(layout.plan(iteration), json.dumps(plan).encode())
    for rid, calls in rollouts.items():
        store.put_bytes(layout.trajectory(iteration, rid), "".join(c.model_dump_json() + "\n" for c in calls).encode())
        store.put_bytes(layout.outcome(iteration, rid), json.dumps(outcome(rid)).encode())


def test_record_writes_the_iteration_and_counts_unreadable_rollouts(tmp_path: Path) -> None:
    store, layout = LocalStore(tmp_path), RunLayout("run")
    _iteration(store, layout, 0, {"t-s0": chat_rollout([([("shell", {"command": "ls"})], ["[exit code 0]"])]), "t-s1": chat_rollout([])})
    store.put_bytes(layout.trajectory(0, "t-s1"), b"{not json\n")

    summary = record_analytics(store, layout, 0)

    assert summary.overall.rollouts == 2 and summary.overall.unreadable == 1
    assert list(summary.unreadable) == ["t-s1"]
    assert read_analytics(store, layout, 0) == summary
    assert [r.rollout_id for r in summary.rollouts] == ["t-s0", "t-s1"]  # the plan's order


def test_a_later_iteration_reports_its_change_from_iteration_zero(tmp_path: Path) -> None:
    store, layout = LocalStore(tmp_path), RunLayout("run")
    long = chat_rollout([([("shell", {"command": "ls"})], ["[exit code 0]"]), ([("shell", {"command": "pwd"})], ["[exit code 0]"])])
    _iteration(store, layout, 0, {"t-s0": long, "t-s1": long})
    record_analytics(store, layout, 0)
    _iteration(store, layout, 1, {"t-s0": chat_rollout([]), "t-s1": chat_rollout([])})

    summary = record_analytics(store, layout, 1)

    assert summary.change["turns"].difference == 1 - 3
    assert read_analytics(store, layout, 1).change["turns"].first == 3


def test_an_iteration_without_a_plan_has_no_rollouts(tmp_path: Path) -> None:
    summary = record_analytics(LocalStore(tmp_path), RunLayout("run"), 0)

    assert summary.overall.rollouts == 0 and summary.rollouts == []
