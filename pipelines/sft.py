"""`openforge sft CONFIG`: fine-tune the config's model on recorded sessions before RL.

A thin door onto the SFT workflow (pipelines/sft_workflow.py): it runs that WorkflowTemplate
through the local executor (or, with ``--compile-only``, writes it for a cluster), prints the
epochs, and says which ``model.path`` an RL config starts from. ``fine_tune`` is the step's
work: ``components.trainer.sft_step.sft_from_store``, and each epoch's ``sft/*`` metrics in
an MLflow run of its own (``<name>-sft``, in the run's experiment).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pipelines.evaluate import WARM_START_OPTION
from pipelines.run import load_config_or_exit

if TYPE_CHECKING:
    from components.core.config import ExperimentConfig
    from components.core.storage import ArtifactStore
    from components.trainer.sft import SftReport

SFT_CONFIG_ARGUMENT = typer.Argument(..., help="Experiment config (YAML) with an `sft:` section naming the recordings.")


def fine_tune(config: ExperimentConfig, store: ArtifactStore) -> tuple[SftReport, bool]:
    """Fine-tune and commit (or find it committed), then log each epoch to MLflow (what it lacks)."""
    from components.core.tracking import ExperimentTracker
    from components.trainer.sft_step import sft_from_store

    report, done_before = sft_from_store(config, store)
    tracker = ExperimentTracker(config.tracking, f"{config.name}-sft", experiment=config.name)
    for epoch, metrics in enumerate(report.metrics(), start=1):
        tracker.log_iteration(epoch, metrics)
    return report, done_before


def sft_command(
    config: Path = SFT_CONFIG_ARGUMENT,
    compile_only: bool = typer.Option(False, "--compile-only", help="Write the SFT WorkflowTemplate to OUT (default argo/) and stop."),
    check: bool = typer.Option(False, "--check", help="With --compile-only: validate it as `openforge compile --check` does."),
    out: Path = typer.Option(Path("argo"), "--out", help="Where --compile-only writes the WorkflowTemplate."),
    warm_start: bool = WARM_START_OPTION,
) -> None:
    """Fine-tune on a run's recorded sessions (sft.recordings); commits <name>/sft/checkpoint."""
    from rich.console import Console

    from components.core.storage import RunLayout, open_store
    from components.trainer.sft_step import sft_policy_path
    from pipelines.evaluate import exits_on_failure
    from pipelines.sft_workflow import run_sft_locally

    experiment = load_config_or_exit(config)
    if experiment.sft is None:
        typer.echo(f"{config}: `openforge sft` needs an `sft:` section naming the recordings (docs/trainer.md, \"SFT\")", err=True)
        raise typer.Exit(2)
    if compile_only:
        _write_template(experiment, out, check)
        return
    console = Console()
    with exits_on_failure(console, experiment):
        report, done_before = run_sft_locally(experiment, console, workdir=Path(".openforge"), warm_start=warm_start)
    console.print(_epochs_table(report))
    if report.left_out:
        console.print("left out: " + ", ".join(f"{reason} {n}" for reason, n in sorted(report.left_out.items())))
    if done_before:
        console.print("already committed: nothing was redone (delete <name>/sft/ in the store to fine-tune again)")
    store = open_store(experiment.storage.uri, experiment.storage.endpoint_url)
    console.print(
        f"`openforge run` on this config starts RL from it; another config, with model.path: "
        f"{sft_policy_path(store, RunLayout(experiment.name))}",
        soft_wrap=True,
    )


def _write_template(experiment: ExperimentConfig, out: Path, check: bool) -> None:
    from pipelines.compile import check_or_exit, manifest_filename
    from pipelines.manifest_yaml import dump_manifest
    from pipelines.sft_workflow import compile_sft

    doc = compile_sft(experiment)
    target = out / experiment.name
    target.mkdir(parents=True, exist_ok=True)
    path = target / manifest_filename(doc, experiment.name)
    path.write_text(dump_manifest(doc))
    typer.echo(f"wrote {path}")
    if check:
        check_or_exit([doc])


def _epochs_table(report: SftReport):
    from rich.table import Table

    table = Table(title=f"SFT on {report.sessions} sessions ({len(report.held_out_sessions)} held out)")
    for column in ("epoch", "loss", "token acc.", "val. loss", "val. token acc."):
        table.add_column(column, justify="right")
    for e in report.epochs:
        mark = " (kept)" if e.epoch == report.chosen_epoch else ""
        val = [f"{e.val_loss:.4f}", f"{e.val_token_accuracy:.3f}"] if e.val_loss is not None else ["-", "-"]
        table.add_row(f"{e.epoch}{mark}", f"{e.loss:.4f}", f"{e.token_accuracy:.3f}", *val)
    return table
