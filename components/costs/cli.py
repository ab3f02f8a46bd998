"""``openforge report CONFIG``: what the run's iterations cost, and what a stated scale would."""

from __future__ import annotations

from pathlib import Path

import typer


def report_command(
    config: Path = typer.Argument(..., help="Experiment config (YAML) whose run to report, e.g. examples/quickstart.yaml."),
    iteration: int | None = typer.Option(None, min=0, help="Only this iteration (default: every one with cost records)."),
    gpu_hour: float = typer.Option(0.0, min=0, help="Price of one GPU for one hour."),
    cpu_hour: float = typer.Option(0.0, min=0, help="Price of one CPU core for one hour."),
    storage_gb_month: float = typer.Option(0.0, min=0, help="Price of keeping 10^9 bytes for one month."),
    scale_tasks: int | None = typer.Option(None, min=1, help="Extrapolate to this many tasks per iteration."),
    scale_samples: int | None = typer.Option(None, min=1, help="Rollouts per task at scale (default: the config's)."),
    scale_gpus: int | None = typer.Option(None, min=1, help="GPUs serve and train hold at scale (default: as measured, at least 1)."),
    scale_concurrency: int | None = typer.Option(None, min=1, help="Rollouts at once at scale (default: the config's)."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """What each iteration cost (wall, CPU, GPU, storage, per trained token) and, with --scale-tasks, at a scale."""
    from rich.console import Console

    from components.core.config import ConfigError, load_config
    from components.core.storage import StorageError, open_store
    from components.costs.aggregate import NoCostRecords
    from components.costs.pricing import Prices
    from components.costs.render import render
    from components.costs.report import ScaleRequest, build_report
    from components.costs.scale import ScaleError

    scale_given = (scale_samples, scale_gpus, scale_concurrency)
    if scale_tasks is None and any(v is not None for v in scale_given):
        raise typer.BadParameter("the other --scale-* options need --scale-tasks: give the number of tasks", param_hint="--scale-tasks")
    try:
        experiment = load_config(config)
        store = open_store(experiment.storage.uri, experiment.storage.endpoint_url)
    except (ConfigError, StorageError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    scale = None
    if scale_tasks is not None:
        scale = ScaleRequest(tasks=scale_tasks, samples=scale_samples, gpus=scale_gpus, concurrency=scale_concurrency)
    prices = Prices(gpu_hour=gpu_hour, cpu_hour=cpu_hour, storage_gb_month=storage_gb_month)
    try:
        report = build_report(experiment, store, prices, iteration, scale)
    except (NoCostRecords, ScaleError, StorageError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if json_output:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render(report, Console())
