"""rollout: one pod per rollout, the harness and its runner here, the recording proxy as a sidecar.

Calls ``components.rollout.runner.run_rollout``: workspace, harness, verifier, and an
``outcome.json`` whatever happened to the agent (only infrastructure trouble fails the
pod). The pod holds no storage, model or Kubernetes credentials: the task folder comes
in and the outcome, trajectory, images and the pod's cost record go out as artifacts
that the executor (Argo's init and wait containers, or the local executor) moves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from components.core.rollout_identity import IMAGES_DIR, OUTCOME_FILE, ROLLOUT_ID_FORM, parse_rollout_id, trajectory_file
from components.costs.keys import cost_record_key
from pipelines.steps._costs import COST_FILE
from pipelines.steps._spec import ITERATION, Artifact, Flag, StepSpec, input_value, iteration_flag

ROLLOUT_ID = input_value("rollout-id")
TASK_ID = input_value("task-id")
PROXY_PORT = 8100
# The pod's shared emptyDir: the proxy sidecar writes trajectories into it and the runner
# reads them there, so both containers mount it at the same path.
WORK_VOLUME = "work"
WORK_DIR = "/work"
TASK_DIR = f"{WORK_DIR}/task"
TRAJECTORY_DIR = f"{WORK_DIR}/trajectories"
OUT_DIR = f"{WORK_DIR}/out"
TRAJECTORY_FILE = f"{TRAJECTORY_DIR}/{trajectory_file(ROLLOUT_ID)}"


def run(iteration: int, rollout_id: str, task_dir: Path, proxy_url: str, trajectory: Path, out: Path) -> None:
    from components.core.config import ConfigError, config_from_env
    from components.core.outcome import Outcome, RolloutStatus
    from components.rollout.runner import write_outcome

    run_rollout = SPEC.component()
    try:
        task_id, sample_index = parse_rollout_id(rollout_id)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--rollout-id") from None
    try:
        config = config_from_env()
    except ConfigError as exc:
        # Still leave an outcome, so scoring reports this rollout instead of losing it.
        failed = Outcome(
            rollout_id=rollout_id,
            task_id=task_id,
            sample_index=sample_index,
            iteration=iteration,
            status=RolloutStatus.INFRA_ERROR,
            details=f"no usable experiment config: {exc}",
        )
        write_outcome(failed, out)
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    with _sigterm_exits():
        outcome = run_rollout(
            config,
            iteration=iteration,
            rollout_id=rollout_id,
            task_dir=task_dir,
            proxy_url=proxy_url,
            trajectory=trajectory,
            out_dir=out,
        )
    verdict = "" if outcome.reward is None else f" reward={outcome.reward:.3g}"
    typer.echo(f"{rollout_id}: {outcome.status.value}{verdict} calls={outcome.num_calls} {outcome.details}".rstrip())


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """Turn SIGTERM (a pod or executor stopping this step) into SystemExit while inside.

    The harness runs in a session of its own, out of reach of a signal sent to this
    process's group; unwinding through the runner's ``finally`` kills that session too.
    """
    import signal
    import sys

    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


SPEC = StepSpec(
    name="rollout",
    summary="Run one rollout (workspace, harness, verifier) and write its outcome; exits 0 whenever it wrote one.",
    calls="components.rollout.runner:run_rollout",
    run=run,
    flags=(
        iteration_flag("The iteration this rollout belongs to."),
        Flag("rollout_id", str, f"{ROLLOUT_ID_FORM}, as the prepare step listed it.", value=ROLLOUT_ID),
        Flag("task_dir", Path, "The task folder (the run's snapshot of it).", value=TASK_DIR),
        Flag("proxy_url", str, "The recording proxy, e.g. http://127.0.0.1:8100.", value=f"http://127.0.0.1:{PROXY_PORT}"),
        Flag("trajectory", Path, "The session file the proxy writes for this rollout.", value=TRAJECTORY_FILE),
        Flag("out", Path, f"Folder that receives {OUTCOME_FILE}.", value=OUT_DIR),
    ),
    inputs=("iteration", "rollout-id", "task-id", "deadline", "serve-address"),
    artifacts_in=(Artifact("task", TASK_DIR, lambda layout: layout.task(TASK_ID)),),
    artifacts_out=(
        Artifact("outcome", f"{OUT_DIR}/{OUTCOME_FILE}", lambda layout: layout.outcome(ITERATION, ROLLOUT_ID)),
        # A harness that never called the model leaves no trajectory: that is an outcome, not an error.
        Artifact("trajectory", TRAJECTORY_FILE, lambda layout: layout.trajectory(ITERATION, ROLLOUT_ID), optional=True),
        # The screenshots and other images the records refer to (stored once by hash by the
        # proxy); a folder uploaded file by file, absent for image-free calls.
        Artifact("images", f"{TRAJECTORY_DIR}/{IMAGES_DIR}", lambda layout: layout.images(ITERATION), optional=True),
        # What the pod cost (pipelines/steps/_costs.py); a pod killed before it wrote one leaves none.
        Artifact("cost", f"{OUT_DIR}/{COST_FILE}", lambda layout: cost_record_key(layout, ITERATION, "rollout", ROLLOUT_ID), optional=True),
    ),
    cost_part="rollout_id",
    cost_dir="out",
)
