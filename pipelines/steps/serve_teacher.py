"""serve-teacher: on-policy distillation's teacher, a daemon of the iteration's teach sub-DAG.

Calls ``components.engine.step.serve_teacher``: ``algorithm.distillation.teacher_model``
on the policy's engine (``engine.kind``), under the policy's served name, so the distill
step can ask it for prompt log-probs. It starts after generate, once the policy's engine
has stopped, and stops when distill has scored the batch, before train takes the GPU.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import UNUSABLE, step_config, step_store, stop
from pipelines.steps._spec import StepSpec, iteration_flag
from pipelines.steps.serve import SPEC as SERVE


def run(iteration: int, host: str, port: int) -> None:
    from components.engine.readiness import EngineNotReady
    from components.engine.server import EngineStartError

    config = step_config()
    try:
        code = SPEC.component()(config, iteration, step_store(config), host, port, say=typer.echo)
    except (FileNotFoundError, EngineNotReady, EngineStartError) as exc:
        stop(f"error: {exc}", UNUSABLE)
    raise typer.Exit(code)


SPEC = StepSpec(
    name="serve-teacher",
    summary="Serve algorithm.distillation.teacher_model for the distill step's prompt log-probs.",
    calls="components.engine.step:serve_teacher",
    run=run,
    # The serve step's flags: the same host and port, read by the same readiness probe.
    flags=(iteration_flag("The iteration whose batch the teacher scores."), *SERVE.flags[1:]),
    writes=("costs",),
)
