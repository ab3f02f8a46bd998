"""train: the GRPO update on the iteration's scored rollouts; commits checkpoint K+1.

Calls ``components.trainer.step.train_iteration`` (the CPU update or veRL's workers, as
``trainer.backend`` says). A batch that cannot train (nothing sampled, all groups equal)
stops with the counts per reason and the fix, not a traceback.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import call_on_store
from pipelines.steps._spec import StepSpec, iteration_flag


def run(iteration: int) -> None:
    from components.trainer.cpu_update import UpdateError
    from components.trainer.rows import BatchError

    # A stop with its reasons and fix, not a crash: no traceback.
    metrics = call_on_store(SPEC, iteration, refusals=(UpdateError, BatchError))
    typer.echo(", ".join(f"{name}={value:.4g}" for name, value in sorted(metrics.items())))


SPEC = StepSpec(
    name="train",
    summary="Build the batch, run the GRPO update on CPU and commit checkpoint K+1.",
    calls="components.trainer.step:train_iteration",
    run=run,
    flags=(iteration_flag("The iteration whose rollouts to train on (serves checkpoint K)."),),
    reads=("rewards", "trajectory", "images", "checkpoint", "checkpoint_marker", "metrics", "teacher_log_probs"),
    writes=("batch", "checkpoint", "checkpoint_marker", "metrics", "costs"),
)
