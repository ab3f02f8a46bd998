"""`openforge sft CONFIG`: fine-tune the config's model on recorded sessions before RL.

A thin door onto ``components.trainer.sft_step.sft_from_store``: it logs each epoch's
``sft/*`` metrics to an MLflow run of its own (``<name>-sft``, in the run's experiment),
prints the epochs, and says which ``model.path`` an RL config starts from.
"""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.run import load_config_or_exit

SFT_CONFIG_ARGUMENT = typer.Argument(..., help="Experiment config (YAML) with an `sft:` section naming the recordings.")


def sft_command(config: Path = SFT_CONFIG_ARGUMENT) -> None:
    """Fine-tune on a run's recorded sessions (sft.recordings); commits <name>/sft/checkpoint."""
    from rich.console import Console
    from rich.table import Table

    from components.core.storage import RunLayout, open_store
    from components.core.tracking import ExperimentTracker
    from components.trainer.sft import SftError
    from components.trainer.sft_step import sft_from_store, sft_policy_path

    experiment = load_config_or_exit(config)
    console = Console()
    store = open_store(experiment.storage.uri, experiment.storage.endpoint_url)
    try:
        with console.status("fine-tuning on the recorded sessions"):
            report, done_before = sft_from_store(experiment, store)
    except SftError as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    tracker = ExperimentTracker(experiment.tracking, f"{experiment.name}-sft", experiment=experiment.name)
    for epoch, metrics in enumerate(report.metrics(), start=1):
        tracker.log_iteration(epoch, metrics)
    table = Table(title=f"SFT on {report.sessions} sessions ({len(report.held_out_sessions)} held out)")
    for column in ("epoch", "loss", "token acc.", "val. loss", "val. token acc."):
        table.add_column(column, justify="right")
    for e in report.epochs:
        mark = " (kept)" if e.epoch == report.chosen_epoch else ""
        val = [f"{e.val_loss:.4f}", f"{e.val_token_accuracy:.3f}"] if e.val_loss is not None else ["-", "-"]
        table.add_row(f"{e.epoch}{mark}", f"{e.loss:.4f}", f"{e.token_accuracy:.3f}", *val)
    console.print(table)
    if report.left_out:
        console.print("left out: " + ", ".join(f"{reason} {n}" for reason, n in sorted(report.left_out.items())))
    if done_before:
        console.print("already committed: nothing was redone (delete <name>/sft/ in the store to fine-tune again)")
    console.print(
        f"`openforge run` on this config starts RL from it; another config, with model.path: "
        f"{sft_policy_path(store, RunLayout(experiment.name))}",
        soft_wrap=True,
    )
