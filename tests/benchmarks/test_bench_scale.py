"""The simulated-scale benchmark's rows: today's order, then each schedule against it
(benchmarks/bench_scale.py; the model itself is tested in tests/components/costs/test_simulate.py)."""

from __future__ import annotations

import math

import pytest
from benchmarks.bench_scale import _scale_row, _with_train_share

from components.costs.simulate import Cluster, LogNormal, Measured, Schedule, mean_run

MEASURED = Measured(
    durations=LogNormal(math.log(30), 1.0), prepare_s=2, serve_start_s=30, score_s=1, commit_s=5,
    train_s_per_token=0.01, tokens_per_rollout=2000,
)  # fmt: skip
CLUSTER = Cluster(gpus=8, concurrency=64, rollouts=256, iterations=4, engine_bound=False)


def test_each_schedule_gets_a_cell_against_todays_order() -> None:
    cells, best = _scale_row(MEASURED, CLUSTER)
    assert len(cells) == 4 and cells[0].endswith("busy") and " an hour, " in cells[0]
    ratios = [float(cell.split("x,")[0]) for cell in cells[1:]]
    assert round(best, 2) == max(1.0, *ratios)
    assert ratios[0] > 1, "a heavy tail cut at 90% finishes more rollouts an hour"


def test_a_train_share_sets_todays_training_to_that_share_of_generating() -> None:
    idle = mean_run(MEASURED.__class__(**{**MEASURED.__dict__, "train_s_per_token": 0.0}), CLUSTER, Schedule("t"))
    halved = _with_train_share(MEASURED, CLUSTER, 0.5)
    steps = MEASURED.prepare_s + MEASURED.serve_start_s + MEASURED.score_s + MEASURED.commit_s
    generating = idle.wall_s / CLUSTER.iterations - steps
    train_s = CLUSTER.rollouts * halved.tokens_per_rollout * halved.train_s_per_token / CLUSTER.gpus
    assert train_s == pytest.approx(0.5 * generating)
