"""Hand-made cost records in a local store, for the aggregation, pricing and scale tests."""

from __future__ import annotations

import json
from pathlib import Path

from components.core.storage import LocalStore, RunLayout
from components.costs.keys import cost_record_key
from components.costs.record import CostRecord

LAYOUT = RunLayout("demo")


def record(step: str, start: float, wall: float, cpu: float = 0.0, children: float = 0.0, gpus: int = 0,
           part: str | None = None, iteration: int = 0, exit_code: int = 0) -> CostRecord:  # fmt: skip
    return CostRecord(step=step, part=part, iteration=iteration, started_at=start, ended_at=start + wall, wall_s=wall,
                      cpu_self_s=cpu, cpu_children_s=children, gpus=gpus, exit_code=exit_code)  # fmt: skip


def put(store: LocalStore, *records: CostRecord) -> None:
    for r in records:
        store.put_bytes(cost_record_key(LAYOUT, r.iteration, r.step, r.part), r.model_dump_json().encode())


def measured_iteration(tmp_path: Path) -> LocalStore:
    """Iteration 0 of a run: serve (2 GPUs) from t=100 to 160, four rollouts starting at t=110, train (2 GPUs)."""
    store = LocalStore(tmp_path / "store")
    put(
        store,
        record("prepare", 90, 5, cpu=2),
        record("serve", 100, 60, cpu=10, children=20, gpus=2),
        *(record("rollout", 110 + i, 10, cpu=1, children=3, part=f"t{i}-s0") for i in range(4)),
        record("score", 165, 2, cpu=2),
        record("train", 170, 40, cpu=30, gpus=2),
        record("commit", 215, 5, cpu=4),
    )
    for i in range(5):  # one rollout more than recorded: t4 lost its record
        store.put_bytes(LAYOUT.outcome(0, f"t{i}-s0"), b"{}")
    store.put_bytes(LAYOUT.metrics(0), json.dumps({"tokens/sampled": 800.0, "batch/trained_tokens": 400.0}).encode())
    store.put_bytes(LAYOUT.checkpoint(1) + "/model.safetensors", b"x" * 1000)
    store.put_bytes(LAYOUT.checkpoint_marker(1), b"")
    return store
