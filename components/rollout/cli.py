"""``openforge step rollout``: parse, validate, call one function.

It reads the experiment config from ``OPENFORGE_CONFIG_YAML``, as every workflow step does
(the prepare step, which needs the run's state, lives in pipelines/prepare.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer


def rollout_command(
    iteration: Annotated[int, typer.Option(min=0, help="The iteration this rollout belongs to.")],
    rollout_id: Annotated[str, typer.Option(help="<task_id>-s<sample_index>, as the prepare step listed it.")],
    task_dir: Annotated[Path, typer.Option(help="The task folder (the run's snapshot of it).")],
    proxy_url: Annotated[str, typer.Option(help="The recording proxy, e.g. http://127.0.0.1:8100.")],
    trajectory: Annotated[Path, typer.Option(help="The session file the proxy writes for this rollout.")],
    out: Annotated[Path, typer.Option(help="Folder that receives outcome.json.")],
) -> None:
    """Run one rollout (workspace, harness, verifier) and write its outcome; exits 0 whenever it wrote one."""
    from components.core.config import ConfigError, config_from_env
    from components.core.outcome import Outcome, RolloutStatus
    from components.core.rollout_identity import parse_rollout_id
    from components.rollout.runner import run_rollout, write_outcome

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
