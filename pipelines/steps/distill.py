"""distill: the teacher scores the iteration's batch, for on-policy distillation (``algorithm.distillation``).

Calls ``components.trainer.distill_step.score_with_teacher``: the batch train will build,
each row's sampled tokens scored by the serve-teacher daemon's prompt log-probs, stored
for train. A teacher whose tokenizer is not the policy's, or that cannot score, stops
the step with the reason and the fix.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import call_on_store_with, stop
from pipelines.steps._spec import Flag, StepSpec, input_value, iteration_flag

TEACHER_ADDRESS = "teacher-address"


def run(iteration: int, teacher_address: str) -> None:
    from components.trainer.distillation import DistillationError
    from components.trainer.rows import BatchError

    if not teacher_address:
        stop("error: --teacher-address is empty: the teach sub-DAG passes the serve-teacher daemon's host:port")
    counts = call_on_store_with(SPEC, iteration, (teacher_address,), refusals=(DistillationError, BatchError))
    typer.echo(f"the teacher scored {counts['sampled_tokens']} sampled tokens in {counts['rows']} rows")


SPEC = StepSpec(
    name="distill",
    summary="Have the teacher score the iteration's batch (prompt log-probs of the sampled tokens) for train.",
    calls="components.trainer.distill_step:score_with_teacher",
    run=run,
    flags=(
        iteration_flag("The iteration whose batch to score."),
        Flag("teacher_address", str, "host:port of the teacher's engine.", value=input_value(TEACHER_ADDRESS)),
    ),
    inputs=("iteration", TEACHER_ADDRESS),
    reads=("rewards", "trajectory", "images", "checkpoint", "checkpoint_marker", "teacher_log_probs"),
    writes=("teacher_log_probs", "costs"),
)
