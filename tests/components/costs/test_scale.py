"""The extrapolation's figures against the stated formula, worked by hand."""

from __future__ import annotations

import pytest

from components.costs.aggregate import read_iteration_costs
from components.costs.pricing import Prices
from components.costs.scale import Scale, ScaleError, extrapolate
from tests.components.costs._records import LAYOUT, measured_iteration, put, record


@pytest.fixture
def measured(tmp_path):
    return read_iteration_costs(measured_iteration(tmp_path), LAYOUT, 0, committed_checkpoint=True)


def test_the_paper_scale_by_hand(measured) -> None:
    # 4 rollouts measured at concurrency 2 (2 waves); 100 tasks x 8 samples at 16 at once (50 waves), 8 GPUs.
    scale = Scale(tasks=100, samples=8, gpus=8, concurrency=16)

    at = extrapolate(measured, concurrency=2, scale=scale, prices=Prices(gpu_hour=3600, cpu_hour=3600))

    f = 800 / 4
    serve = 10 + 50 * 50 / 2  # start-up: serve at 100, first rollout at 110; then 50 s of serving x 50/2 waves
    train = 40 * f * 2 / 8  # linear in trained tokens, measured on 2 GPUs, run on 8
    assert at.rollouts == 800
    assert at.serve_wall_s == pytest.approx(serve)
    assert at.train_wall_s == pytest.approx(train)
    assert at.tokens_trained == pytest.approx(400 * f)
    assert at.gpu_s == pytest.approx(8 * (serve + train))
    cpu = 2 + 30 * serve / 60 + 16 * f + 2 * f + 30 * train / 40 + 4 * f
    assert at.cpu_s == pytest.approx(cpu)
    assert at.wall_s == pytest.approx(5 + serve + 2 * f + train + 5 * f)
    assert at.stored_gb == pytest.approx((measured.iteration_bytes * f + 1000) / 1e9)
    assert at.cost == pytest.approx(at.gpu_s + at.cpu_s)  # one per GPU-second and per CPU-second
    assert at.cost_per_trained_token == pytest.approx(at.cost / (400 * f))
    shown = "\n".join(at.formulas)
    assert "R' = tasks x samples = 100 x 8 = 800 rollouts; measured R = 4, f = R'/R = 200" in shown
    assert "waves' = ceil(R'/C') = ceil(800/16) = 50" in shown
    assert f"= {serve:.4g} s" in shown and f"train' = train x f x g/G (2/8) = 40 x 200 x 0.25 = {train:.4g} s" in shown


def test_a_cpu_measurement_assumes_no_gpu_speedup_and_says_so(tmp_path) -> None:
    store = measured_iteration(tmp_path)
    put(store, record("train", 170, 40, cpu=30, gpus=0))
    measured = read_iteration_costs(store, LAYOUT, 0, committed_checkpoint=True)

    at = extrapolate(measured, concurrency=4, scale=Scale(tasks=4, samples=1, gpus=8, concurrency=4), prices=Prices())

    assert at.train_wall_s == pytest.approx(40)  # same rollouts, same tokens, no speed-up
    assert "no GPU speed-up assumed" in "\n".join(at.formulas)
    assert any("measured on CPU" in a for a in at.assumptions)


def test_an_iteration_without_rollouts_cannot_be_extrapolated(tmp_path) -> None:
    store = measured_iteration(tmp_path)
    put(store, record("prepare", 500, 1, iteration=3))
    measured = read_iteration_costs(store, LAYOUT, 3, committed_checkpoint=False)

    with pytest.raises(ScaleError, match="ran no rollouts"):
        extrapolate(measured, concurrency=1, scale=Scale(tasks=1, samples=1, gpus=1, concurrency=1), prices=Prices())
