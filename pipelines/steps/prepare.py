"""prepare: resolve the iteration against the run's state, freeze its tasks, list the rollouts left.

Calls ``pipelines.prepare.prepare_step``; its decisions (``next``, resumed plans, skipped
finished rollouts) are documented there. Its outputs are one small file each, read back
by the DAG as output parameters: the iteration number, whether it is pending, whether any
rollout is left (the serve + rollout sub-DAG runs only then) and the fan-out list, and the
same three for the next iteration (overlapped iterations, ``algorithm.max_staleness: 1``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pipelines.steps._spec import ITERATION, Flag, OutputFile, StepSpec, input_value
from pipelines.steps._context import UNUSABLE, step_config, step_store, stop

if TYPE_CHECKING:
    from pipelines.prepare import Prepared

NEXT = "next"
STOP_AT = "stop-at"  # the input: the iteration a bounded run stops before (0: none, the CronWorkflow)
# The DAG task that runs the next-* outputs: the next iteration's rollouts, while this one trains.
GENERATE_NEXT = "generate-next"
# A volume in the pod, so the folder is a path the local executor maps into its sandbox.
OUT_DIR = "/tmp/prepare"


def run(iteration: str, stop_at: int, out_dir: Path) -> int:
    """Prepare the iteration; returns the number ``--iteration`` (maybe ``next``) resolved to, for its cost record."""
    from components.core.config import ConfigError
    from components.rollout.prepare import NoChoicesError
    from components.rollout.tasks import TaskError
    from pipelines.prepare import PrepareError, parse_iteration

    prepare_step = SPEC.component()
    try:
        config = step_config()
        prepared = prepare_step(config, parse_iteration(iteration), step_store(config), stop_at)
    except (ConfigError, TaskError, PrepareError, NoChoicesError) as exc:
        stop(str(exc), UNUSABLE)
    write_outputs(prepared, out_dir)
    typer.echo(prepared.reason)
    return prepared.iteration


def write_outputs(prepared: Prepared, out_dir: Path) -> None:
    """One file per output parameter, named as the spec declares them."""
    values = {
        "iteration": str(prepared.iteration),
        "pending": str(prepared.pending).lower(),
        "generate": str(prepared.generate).lower(),
        "rollouts": json.dumps(prepared.rollouts),
        "next-iteration": str(prepared.iteration + 1),
        "next-generate": str(prepared.generate_next).lower(),
        "next-rollouts": json.dumps(prepared.next_rollouts),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for output in SPEC.outputs:
        (out_dir / output.file).write_text(values[output.name])


SPEC = StepSpec(
    name="prepare",
    summary="Resolve the iteration from the run's state, pick its tasks and list the rollouts left to run.",
    calls="pipelines.prepare:prepare_step",
    run=run,
    flags=(
        Flag("iteration", str, f"The iteration to prepare, or {NEXT!r}: the first not yet committed.", value=ITERATION),
        Flag(
            "stop_at",
            int,
            "The iteration the run stops before (0: none): overlapped iterations plan nothing ahead into it.",
            value=input_value(STOP_AT),
            default=0,
            min=0,
        ),
        Flag("out_dir", Path, "Folder for the outputs: iteration, pending, generate, rollouts.json, next-*.", value=OUT_DIR),
    ),
    inputs=("iteration", STOP_AT),
    outputs=(
        OutputFile("iteration", "iteration"),
        OutputFile("pending", "pending"),
        OutputFile("generate", "generate"),
        OutputFile("rollouts", "rollouts.json"),
        OutputFile("next-iteration", "next-iteration"),
        OutputFile("next-generate", "next-generate"),
        OutputFile("next-rollouts", "next-rollouts.json"),
    ),
    output_dir=OUT_DIR,
    reads=("state", "plan", "outcome"),
    writes=("plan", "task", "choices", "costs"),
)
