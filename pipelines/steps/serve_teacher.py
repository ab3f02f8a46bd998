"""serve-teacher: on-policy distillation's teacher, a daemon of the iteration's teach sub-DAG.

Calls ``components.engine.step.serve_teacher``: ``algorithm.distillation.teacher_model``
on the policy's engine (``engine.kind``), under the policy's served name, so the distill
step can ask it for prompt log-probs. It starts after generate, once the policy's engine
has stopped, and stops when distill has scored the batch, before train takes the GPU.
"""

from __future__ import annotations

from pipelines.steps._spec import StepSpec, iteration_flag
from pipelines.steps.serve import SPEC as SERVE
from pipelines.steps.serve import run_engine


def run(iteration: int, host: str, port: int) -> None:
    run_engine(SPEC, iteration, host, port)


SPEC = StepSpec(
    name="serve-teacher",
    summary="Serve algorithm.distillation.teacher_model for the distill step's prompt log-probs.",
    calls="components.engine.step:serve_teacher",
    run=run,
    # The serve step's flags: the same host and port, read by the same readiness probe.
    flags=(iteration_flag("The iteration whose batch the teacher scores."), *SERVE.flags[1:]),
    writes=("costs",),
)
