"""sft: fine-tune the config's model on recorded sessions; the one step of `openforge sft`'s workflow.

Calls ``pipelines.sft.fine_tune``: the SFT of ``components/trainer/sft_step.py``, its
checkpoint committed under ``<name>/sft/``, its epochs logged to MLflow. It belongs to no
iteration (no ``--iteration``, no cost record), and it runs where train runs: the train
image, the train step's resources and the GPU semaphore (pipelines/sft_workflow.py).
"""

from __future__ import annotations

import typer

from pipelines.steps._context import step_config, step_store, stop
from pipelines.steps._spec import StepSpec


def run() -> None:
    from components.trainer.sft import SftError

    config = step_config()
    try:
        report, done_before = SPEC.component()(config, step_store(config))
    except SftError as exc:
        stop(f"error: {exc}")
    if done_before:
        typer.echo("already committed: nothing was redone (delete <name>/sft/ in the store to fine-tune again)")
    for epoch in report.epochs:
        val = "" if epoch.val_loss is None else f" val_loss={epoch.val_loss:.4f} val_token_accuracy={epoch.val_token_accuracy:.3f}"
        typer.echo(f"epoch {epoch.epoch}: loss={epoch.loss:.4f} token_accuracy={epoch.token_accuracy:.3f}{val}")
    typer.echo(f"kept epoch {report.chosen_epoch} of {len(report.epochs)} ({report.sessions} sessions)")


SPEC = StepSpec(
    name="sft",
    summary="Fine-tune the config's model on the recorded sessions `sft:` names; commit <name>/sft/checkpoint.",
    calls="pipelines.sft:fine_tune",
    run=run,
    flags=(),
    inputs=(),
    reads=("outcome", "trajectory", "sft_report", "sft_marker"),
    writes=("sft_checkpoint", "sft_report", "sft_marker"),
)
