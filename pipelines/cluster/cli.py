"""`openforge deploy`, `openforge submit` and `openforge status`: thin doors onto pipelines.cluster.

Hera and requests are imported inside the commands, so `openforge --help` stays instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:  # hera and pydantic models load inside the commands: `openforge --help` stays instant
    from components.core.config import ExperimentConfig
    from pipelines.cluster import ArgoServer

_CONFIG = typer.Argument(..., metavar="CONFIG", help="Experiment config YAML.")


def _load(config_path: Path | None):  # -> tuple[ExperimentConfig | None, ArgoServer]
    from components.core.cluster_config import ClusterConfig
    from components.core.config import ConfigError, load_config
    from pipelines.cluster import ClusterError, server_from_env

    try:
        config = load_config(config_path) if config_path is not None else None
        return config, server_from_env(config.cluster if config is not None else ClusterConfig())
    except (ConfigError, ClusterError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def submit_and_echo(config: ExperimentConfig, server: ArgoServer | None = None, *, once: bool = False) -> None:
    """Submit the config's Workflow (a training run's, or an evaluation's) and print its name and link;
    a refusal is the command's exit 1 with the server's reason and the fix."""
    from pipelines.cluster import ClusterError, server_from_env, submit

    try:
        submitted = submit(config, server or server_from_env(config.cluster), once=once)
    except ClusterError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(submitted.name)
    typer.echo(f"Argo UI: {submitted.link}")


def deploy_command(config_path: Annotated[Path, _CONFIG]) -> None:
    """Create or update the experiment's iteration WorkflowTemplate and its CronWorkflow on the cluster."""
    from pipelines.cluster import ClusterError, deploy

    config, server = _load(config_path)
    try:
        deployed = deploy(config, server)
    except ClusterError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    for item in deployed:
        typer.echo(f"{item.action} {item.kind} {item.name}: {item.link}")


def submit_command(
    config_path: Annotated[Path, _CONFIG],
    once: Annotated[
        bool, typer.Option("--once", help="Run only the next iteration, from the deployed template (as the cron does).")
    ] = False,
) -> None:
    """Submit a training run (every iteration of the config) and print its name and Argo UI link."""
    config, server = _load(config_path)
    submit_and_echo(config, server, once=once)


def status_command(
    name: Annotated[str, typer.Argument(help="The workflow's name, as `openforge submit` printed it.")],
    config_path: Annotated[
        Optional[Path], typer.Option("--config", help="Experiment config, for its namespace and server (default: openforge).")
    ] = None,
) -> None:
    """Show where a submitted workflow stands, and why any of its steps failed."""
    from pipelines.cluster import ClusterError, workflow_status

    _, server = _load(config_path)
    try:
        status = workflow_status(name, server)
    except ClusterError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{status.name}: {status.phase}" + (f" ({status.progress})" if status.progress else ""))
    for label, value in (("started", status.started_at), ("finished", status.finished_at), ("message", status.message)):
        if value:
            typer.echo(f"  {label}: {value}")
    for node, message in status.failed_nodes:
        typer.echo(f"  failed: {node}: {message}")
    typer.echo(f"Argo UI: {status.link}")
    if status.phase in ("Failed", "Error"):
        raise typer.Exit(1)
