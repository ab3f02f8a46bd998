"""An iteration's records summed per step, with its tokens, stored bytes and what is missing."""

from __future__ import annotations

import pytest

from components.costs.aggregate import NoCostRecords, costed_iterations, read_iteration_costs
from tests.components.costs._records import LAYOUT, measured_iteration, put, record


def test_records_sum_per_step_in_the_order_the_steps_started(tmp_path) -> None:
    store = measured_iteration(tmp_path)

    costs = read_iteration_costs(store, LAYOUT, 0, committed_checkpoint=True)

    assert [s.step for s in costs.steps] == ["prepare", "serve", "rollout", "score", "train", "commit"]
    rollout = costs.step("rollout")
    assert (rollout.runs, rollout.wall_s, rollout.cpu_s, rollout.gpu_s) == (4, 40, 16, 0)
    assert costs.step("serve").gpu_s == 120 and costs.step("train").gpu_s == 80
    assert costs.cpu_s == 2 + 30 + 16 + 2 + 30 + 4
    assert costs.gpu_s == 200
    assert costs.wall_s == 220 - 90  # prepare's start to commit's end
    assert (costs.tokens_sampled, costs.tokens_trained) == (800, 400)
    assert costs.rollouts_without_record == 1
    assert costs.steps_without_record == []
    assert costs.checkpoint_bytes == 1000 + 0  # the weights and the empty marker
    assert costs.iteration_bytes == sum(store.sizes(LAYOUT.plan(0).rsplit("/", 1)[0]).values()) > 0


def test_an_unreadable_record_is_named_and_a_failed_run_counted(tmp_path) -> None:
    store = measured_iteration(tmp_path)
    store.put_bytes(LAYOUT.costs(0) + "/broken.json", b"{not json")
    put(store, record("score", 300, 1, exit_code=1))  # a rerun of score that failed replaces the first record

    costs = read_iteration_costs(store, LAYOUT, 0, committed_checkpoint=False)

    assert len(costs.unreadable) == 1 and costs.unreadable[0].startswith(LAYOUT.costs(0) + "/broken.json")
    assert costs.step("score").failed == 1
    assert costs.checkpoint_bytes == 0


def test_only_iterations_with_records_are_costed(tmp_path) -> None:
    store = measured_iteration(tmp_path)
    put(store, record("prepare", 400, 1, iteration=2))
    store.put_bytes(LAYOUT.plan(1), b"{}")  # iteration 1 ran before costs were recorded

    assert costed_iterations(store, LAYOUT) == [0, 2]
    assert read_iteration_costs(store, LAYOUT, 2, committed_checkpoint=False).steps_without_record == ["commit", "score", "train"]
    with pytest.raises(NoCostRecords, match="iteration 1 has no cost record"):
        read_iteration_costs(store, LAYOUT, 1, committed_checkpoint=False)
