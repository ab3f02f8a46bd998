"""Costs in money at the user's prices: known answers."""

from __future__ import annotations

import pytest

from components.costs.aggregate import read_iteration_costs
from components.costs.pricing import Prices, bill
from tests.components.costs._records import LAYOUT, measured_iteration


def test_an_iteration_is_billed_per_step_and_per_trained_token(tmp_path) -> None:
    costs = read_iteration_costs(measured_iteration(tmp_path), LAYOUT, 0, committed_checkpoint=True)
    prices = Prices(gpu_hour=3.6, cpu_hour=0.36, storage_gb_month=1e6)  # 1 per 1000 GPU-s, 0.1 per 1000 CPU-s, 1e-3 per byte

    billed = bill(costs, prices)

    serve = next(s for s in billed.steps if s.step == "serve")
    assert serve.cost == pytest.approx(120 * 0.001 + 30 * 0.0001)
    assert billed.compute_cost == pytest.approx(200 * 0.001 + 84 * 0.0001)
    assert billed.storage_cost == pytest.approx(costs.stored_bytes * 1e-3)
    assert billed.cost == pytest.approx(billed.compute_cost + billed.storage_cost)
    assert billed.cost_per_trained_token == pytest.approx(billed.cost / 400)


def test_free_prices_cost_nothing_and_no_trained_token_has_no_price_per_token(tmp_path) -> None:
    costs = read_iteration_costs(measured_iteration(tmp_path), LAYOUT, 0, committed_checkpoint=True)
    untrained = costs.model_copy(update={"tokens_trained": 0.0})

    assert bill(costs, Prices()).cost == 0
    assert bill(untrained, Prices(gpu_hour=1)).cost_per_trained_token is None


def test_a_negative_price_is_refused() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        Prices(gpu_hour=-1)
