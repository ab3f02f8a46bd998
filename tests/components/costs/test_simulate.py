"""The iteration model: its scheduling by hand-checked cases, its calibration on a real local run."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from components.core.storage import RunLayout, open_store
from components.costs.simulate import (
    Cluster,
    Generation,
    LogNormal,
    Measured,
    Schedule,
    generate,
    mean_run,
    on_shared_cores,
    simulate,
)
from components.costs.simulate_inputs import MissingTimings, measured_run


def test_rollouts_take_the_first_free_slot_and_the_cut_stops_what_runs_past_it() -> None:
    assert generate([1, 2, 3, 4], concurrency=2) == Generation(6, 4, 0, 10)  # ends 1, 2, 4, 6
    cut = generate([1, 2, 3, 4], concurrency=2, finish_fraction=0.5, grace_s=0.5)
    # Two ended by 2 s; the cut at 2.5 s stops the two that started at 1 s and 2 s.
    assert (cut.end_s, cut.finished, cut.cut) == (2.5, 2, 2)
    assert cut.active_s == pytest.approx(1 + 2 + 1.5 + 0.5)
    assert generate([1, 1, 9], concurrency=3, finish_fraction=0.5, grace_s=100).end_s == 9, "never past the last end"


def _fixed(duration_s: float, train_s_per_token: float) -> Measured:
    return Measured(
        durations=LogNormal(math.log(duration_s), 0.0), prepare_s=1, serve_start_s=2, score_s=3, commit_s=4,
        train_s_per_token=train_s_per_token, tokens_per_rollout=10,
    )  # fmt: skip


def test_on_shared_cores_rollouts_slow_down_in_proportion_beyond_one_a_core() -> None:
    at_8 = _fixed(16, 0.1)  # 8 at once on 2 cores: each had a quarter of its core
    assert on_shared_cores(at_8, cores=2, measured_at=8, run_at=2).durations.quantile(0.5) == pytest.approx(4)
    assert on_shared_cores(at_8, cores=2, measured_at=8, run_at=1).durations.quantile(0.5) == pytest.approx(4)
    assert on_shared_cores(at_8, cores=2, measured_at=8, run_at=32).durations.quantile(0.5) == pytest.approx(64)
    same = on_shared_cores(at_8, cores=2, measured_at=8, run_at=8)
    assert same.durations.quantile(0.5) == pytest.approx(16) and same.train_s_per_token == at_8.train_s_per_token


def test_todays_order_adds_up_every_step_of_every_iteration() -> None:
    cluster = Cluster(gpus=2, concurrency=4, rollouts=8, iterations=3)
    out = simulate(_fixed(10, 0.1), cluster, Schedule("today"))
    # prepare 1 + serve 2 + two waves of 10 s + score 3 + 80 tokens x 0.1 s on 2 GPUs + commit 4
    assert out.wall_s == pytest.approx(3 * (1 + 2 + 20 + 3 + 4 + 4))
    assert out.finished == 24 and out.cut == 0 and out.trained_tokens == 240
    busy = 3 * (2 * 80 / 4 + 2 * 4)  # the engine full for both waves, then training on both GPUs
    assert out.gpu_busy_share == pytest.approx(busy / (2 * out.wall_s))


def test_overlap_hides_training_behind_the_next_iterations_rollouts() -> None:
    harness_bound = Cluster(gpus=2, concurrency=4, rollouts=8, iterations=4, engine_bound=False)
    measured = _fixed(10, 0.25)  # 80 tokens: 20 s of training on one GPU, as long as generating
    today = simulate(measured, harness_bound, Schedule("today"))
    overlap = simulate(measured, harness_bound, Schedule("overlap", staleness=1))
    assert today.wall_s == pytest.approx(4 * (1 + 2 + 20 + 3 + 10 + 4))
    # Iteration k + 1 serves checkpoint k as soon as iteration k's rollouts end (worked by hand).
    assert overlap.iteration_ends == pytest.approx([50, 73, 100, 123])
    assert overlap.finished == today.finished
    engine_bound = simulate(measured, Cluster(gpus=2, concurrency=4, rollouts=8, iterations=4), Schedule("o", staleness=1))
    assert engine_bound.wall_s > overlap.wall_s, "half the engine runs half the rollouts at once"


def test_with_training_far_longer_than_generating_overlap_on_half_the_gpus_loses() -> None:
    harness_bound = Cluster(gpus=2, concurrency=4, rollouts=8, iterations=4, engine_bound=False)
    measured = _fixed(10, 2.0)  # 160 s of training on one GPU, 80 s on two
    today = simulate(measured, harness_bound, Schedule("today"))
    overlap = simulate(measured, harness_bound, Schedule("overlap", staleness=1))
    assert overlap.wall_s > today.wall_s
    gaps = [b - a for a, b in zip(overlap.iteration_ends, overlap.iteration_ends[1:])]
    assert gaps == pytest.approx([160.0] * 3), "the trainer on its one GPU sets the pace"
    with pytest.raises(ValueError, match="serve_gpus"):
        simulate(measured, Cluster(gpus=1, concurrency=4, rollouts=8, iterations=1), Schedule("o", staleness=1))


def test_the_fit_recovers_a_log_normal_and_the_mean_is_over_runs() -> None:
    truth = LogNormal(3.0, 0.8)
    fitted = LogNormal.fit(truth.sample(random.Random(1), 5000))
    assert fitted.mu == pytest.approx(3.0, abs=0.05) and fitted.sigma == pytest.approx(0.8, abs=0.05)
    assert truth.quantile(0.5) == pytest.approx(math.exp(3.0))
    with pytest.raises(ValueError, match="at least 2"):
        LogNormal.fit([5.0])
    mean = mean_run(_fixed(10, 0.1), Cluster(gpus=1, concurrency=2, rollouts=4, iterations=1), Schedule("t"), runs=3)
    assert mean.finished == 4


def test_a_real_runs_records_calibrate_the_model_which_predicts_its_wall_time(quickstart_store: tuple[str, Path]) -> None:
    uri, _ = quickstart_store
    run = measured_run(open_store(uri), RunLayout("quickstart"), concurrency=8)
    assert run.iterations == 1 and run.rollouts_per_iteration == len(run.rollout_s) == 16
    m = run.measured
    assert m.train_s_per_token > 0 and m.tokens_per_rollout > 0 and m.serve_start_s > 0
    cluster = Cluster(gpus=1, concurrency=8, rollouts=16, iterations=1)
    predicted = mean_run(m, cluster, Schedule("today")).wall_s
    assert predicted == pytest.approx(run.wall_s, rel=0.15)


def test_a_rollout_waits_its_pods_start_after_its_slot_frees_and_the_rest_is_between_steps(tmp_path: Path) -> None:
    from tests.components.costs._records import LAYOUT, put, record

    from components.core.storage import LocalStore

    store = LocalStore(tmp_path / "store")
    # One slot: rollouts of 10 s, each next one starting 1 s after the last ended (its pod's start).
    put(
        store,
        record("prepare", 0, 1),
        record("serve", 1, 40),
        *(record("rollout", 5 + 11 * i, 10, part=f"t{i}-s0") for i in range(3)),  # ends 15, 26, 37
        record("score", 39, 1),  # 2 s after the last rollout: the engine's stop, the DAG moving on
        record("train", 40, 2),
        record("commit", 42, 1),
    )
    store.put_bytes(LAYOUT.metrics(0), b'{"batch/trained_tokens": 30.0}')
    m = measured_run(store, LAYOUT, concurrency=1).measured
    assert m.durations.quantile(0.5) == pytest.approx(11)  # from the slot freeing: 1 s pod start + 10 s
    assert m.serve_start_s == 4
    # 43 s of wall: prepare 1, serve start 4, three rollouts in 32 s, score, train and commit 4,
    # less the pod start the model adds to the first rollout too: 2 s left between steps.
    assert m.between_steps_s == pytest.approx(43 - 1 - 4 - 32 - 4 - 1)
    predicted = mean_run(m, Cluster(gpus=1, concurrency=1, rollouts=3, iterations=1), Schedule("today")).wall_s
    assert predicted == pytest.approx(43)


def test_a_run_without_records_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MissingTimings, match="no iteration with a train step"):
        measured_run(open_store(f"file://{tmp_path}"), RunLayout("nothing"), concurrency=1)
