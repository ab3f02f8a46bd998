"""The cost report of one run: its iterations billed, and optionally one extrapolated to a scale.

What ``openforge report`` prints (components/costs/cli.py) or gives as JSON.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, run_layout
from components.costs.aggregate import IterationCosts, NoCostRecords, costed_iterations, read_iteration_costs
from components.costs.pricing import FORMULA, IterationBill, Prices, bill
from components.costs.record import SERVE, TRAIN
from components.costs.scale import Extrapolation, Scale, ScaleError, extrapolate


class ScaleRequest(BaseModel):
    """What the user asked to extrapolate to; what is left unset comes from the config or the measurement."""

    model_config = ConfigDict(extra="forbid")

    tasks: int
    samples: int | None = None
    gpus: int | None = None
    concurrency: int | None = None


class CostReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    experiment: str
    store: str
    prices: Prices
    formula: str
    iterations: list[IterationBill]
    extrapolation: Extrapolation | None
    notes: list[str]  # what is missing or unreadable, counted


def _no_records(config: ExperimentConfig, store: ArtifactStore) -> NoCostRecords:
    return NoCostRecords(
        f"{store.root}/{config.name} holds no cost records: the run was made before steps recorded their costs, "
        "or has run no iteration yet. Run an iteration with this version (`openforge run CONFIG`), then report again."
    )


def build_report(
    config: ExperimentConfig, store: ArtifactStore, prices: Prices, iteration: int | None = None, scale: ScaleRequest | None = None
) -> CostReport:
    """Bill the run's iterations (or only ``iteration``); extrapolate when ``scale`` is given."""
    layout = run_layout(config)
    available = costed_iterations(store, layout)
    if not available:
        raise _no_records(config, store)
    if iteration is not None and iteration not in available:
        raise NoCostRecords(f"iteration {iteration} has no cost records; these do: {', '.join(map(str, available))}")
    trained = config.evaluation is None  # an evaluation commits no checkpoint
    measured = [
        read_iteration_costs(store, layout, k, trained and store.exists(layout.checkpoint_marker(k + 1)))
        for k in ([iteration] if iteration is not None else available)
    ]
    extrapolation = None
    if scale is not None:
        source = _measured_for_scale(measured)
        extrapolation = extrapolate(source, config.rollout.concurrency, _resolve(scale, config, source), prices)
    return CostReport(
        experiment=config.name,
        store=store.root,
        prices=prices,
        formula=FORMULA,
        iterations=[bill(m, prices) for m in measured],
        extrapolation=extrapolation,
        notes=[note for m in measured for note in _notes(m)],
    )


def _measured_for_scale(measured: list[IterationCosts]) -> IterationCosts:
    """The last iteration that ran rollouts: the one the extrapolation starts from."""
    with_rollouts = [m for m in measured if m.rollouts]
    if not with_rollouts:
        raise ScaleError("no reported iteration ran rollouts, so there is nothing to extrapolate from")
    return with_rollouts[-1]


def _resolve(request: ScaleRequest, config: ExperimentConfig, measured: IterationCosts) -> Scale:
    held = max((line.gpus for line in measured.steps if line.step in (SERVE, TRAIN)), default=0)
    return Scale(
        tasks=request.tasks,
        samples=request.samples or config.rollout.samples_per_task,
        gpus=request.gpus or max(held, 1),
        concurrency=request.concurrency or config.rollout.concurrency,
    )


def _notes(measured: IterationCosts) -> list[str]:
    notes = []
    if measured.rollouts_without_record:
        notes.append(
            f"iteration {measured.iteration}: {measured.rollouts_without_record} rollouts have an outcome but no cost "
            "record (a pod stopped before it wrote one, or run before records existed); their cost is not counted"
        )
    if measured.steps_without_record:
        notes.append(
            f"iteration {measured.iteration}: no cost record from {', '.join(measured.steps_without_record)} "
            "(not run yet, stopped before it recorded, or its write failed: see the step's log)"
        )
    notes += [f"iteration {measured.iteration}: unreadable cost record {what}" for what in measured.unreadable]
    return notes
