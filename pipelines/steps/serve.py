"""serve: the inference engine on this iteration's checkpoint, as a daemon of the generate sub-DAG.

Calls ``components.engine.step.serve_iteration``: the newest committed checkpoint <= K
(<= K - 1 with ``algorithm.max_staleness: 1``; committing the initial policy first), on the dev engine or vLLM as ``engine.kind`` says.
The workflow waits for its readiness probe on ``PORT`` before any rollout starts.
"""

from __future__ import annotations

import typer

from pipelines.steps._context import UNUSABLE, step_config, step_store, stop
from pipelines.steps._spec import Flag, StepSpec, iteration_flag

PORT = 8000
HEALTH_PATH = "/health"


def run(iteration: int, host: str, port: int) -> None:
    run_engine(SPEC, iteration, host, port)


def run_engine(spec: StepSpec, iteration: int, host: str, port: int) -> None:
    """Serve until stopped with ``spec``'s component; an engine that cannot start stops the step unusable."""
    from components.engine.readiness import EngineNotReady
    from components.engine.server import EngineStartError

    config = step_config()
    try:
        code = spec.component()(config, iteration, step_store(config), host, port, say=typer.echo)
    except (FileNotFoundError, EngineNotReady, EngineStartError) as exc:
        stop(f"error: {exc}", UNUSABLE)
    raise typer.Exit(code)


SPEC = StepSpec(
    name="serve",
    summary="Serve the newest committed checkpoint <= ITERATION (committing the initial policy first).",
    calls="components.engine.step:serve_iteration",
    run=run,
    flags=(
        iteration_flag("The iteration whose policy to serve."),
        Flag("host", str, "Interface to listen on (the pod's, on a cluster).", value="0.0.0.0", default="0.0.0.0"),
        Flag("port", int, "Port to listen on.", value=str(PORT), default=PORT, min=0, max=65535),
    ),
    reads=("checkpoint", "checkpoint_marker", "choices"),
    writes=("checkpoint", "checkpoint_marker", "evaluated_checkpoint", "straggler_cut", "costs"),
)
