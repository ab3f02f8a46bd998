"""The cost report as rich tables and lines, for a terminal (``--json`` gives the model instead)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from components.costs.pricing import IterationBill
from components.costs.report import CostReport
from components.costs.scale import Extrapolation


def _n(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _iteration_table(line: IterationBill) -> Table:
    table = Table(title=f"iteration {line.iteration}", title_justify="left")
    for column in ("step", "runs", "failed", "wall s", "CPU s", "GPUs", "GPU s", "cost"):
        table.add_column(column, justify="left" if column == "step" else "right")
    for step in line.steps:
        table.add_row(step.step, str(step.runs), str(step.failed), _n(step.wall_s), _n(step.cpu_s), str(step.gpus),
                      _n(step.gpu_s), _n(step.cost))  # fmt: skip
    table.add_row("storage", "", "", "", "", "", "", _n(line.storage_cost), end_section=True)
    table.add_row("total", "", "", _n(line.wall_s), _n(line.cpu_s), "", _n(line.gpu_s), _n(line.cost))
    return table


def _summary(line: IterationBill) -> str:
    return (
        f"elapsed {_n(line.wall_s)} s; tokens sampled {_n(line.tokens_sampled, 9)}, trained {_n(line.tokens_trained, 9)}; "
        f"stored {_n(line.stored_gb)} GB; cost per trained token {_n(line.cost_per_trained_token)}"
    )


def _extrapolation(console: Console, scale: Extrapolation) -> None:
    s = scale.scale
    console.print(
        f"\n[bold]At scale[/bold] (from iteration {scale.from_iteration}): {s.tasks} tasks x {s.samples} samples, "
        f"{s.gpus} GPUs, {s.concurrency} rollouts at once"
    )
    table = Table()
    for column in ("rollouts", "serve s", "train s", "wall s", "GPU s", "CPU s", "GB", "cost", "per trained token"):
        table.add_column(column, justify="right")
    table.add_row(str(scale.rollouts), _n(scale.serve_wall_s), _n(scale.train_wall_s), _n(scale.wall_s), _n(scale.gpu_s),
                  _n(scale.cpu_s), _n(scale.stored_gb), _n(scale.cost), _n(scale.cost_per_trained_token))  # fmt: skip
    console.print(table)
    console.print("Formula (measured figures substituted):", markup=False)
    for formula in scale.formulas:
        console.print(f"  {formula}", markup=False, highlight=False)
    console.print("Assumptions:")
    for assumption in scale.assumptions:
        console.print(f"  - {assumption}", markup=False, highlight=False)


def render(report: CostReport, console: Console) -> None:
    p = report.prices
    console.print(
        f"[bold]{report.experiment}[/bold] ({report.store}); prices: GPU-hour {p.gpu_hour}, CPU-hour {p.cpu_hour}, "
        f"storage GB-month {p.storage_gb_month}"
    )
    console.print(report.formula, markup=False, highlight=False)
    for line in report.iterations:
        console.print(_iteration_table(line))
        console.print(_summary(line), highlight=False)
    if report.extrapolation is not None:
        _extrapolation(console, report.extrapolation)
    for note in report.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
