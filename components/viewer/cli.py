"""``openforge view``: serve the trajectory viewer over a run's store (components/viewer/app.py)."""

from __future__ import annotations

from pathlib import Path

import typer

_SOURCE = "An experiment config (YAML: its storage and run) or a store URI (file://PATH, s3://BUCKET/PREFIX)."


def view_command(
    source: str = typer.Argument(..., help=_SOURCE),
    host: str = typer.Option("127.0.0.1", help="Address to listen on; keep loopback unless the store is meant to be shared."),
    port: int = typer.Option(8585, min=0, max=65535, help="Port to listen on (0: a free one)."),
    endpoint_url: str | None = typer.Option(None, help="S3 endpoint for an s3:// store given as a URI."),
) -> None:
    """Browse runs, iterations, rollouts and what the trainer saw, in a local web page."""
    from aiohttp import web

    from components.core.storage import open_store
    from components.viewer.app import Viewer

    start, mlflow_url = "/", None
    if source.endswith((".yaml", ".yml")) or Path(source).is_file():
        from components.core.config import ConfigError, load_config

        try:
            config = load_config(Path(source))
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        store = open_store(config.storage.uri, config.storage.endpoint_url)
        start = f"/runs/{config.name}"
        mlflow_url = config.tracking.uri if config.tracking.uri.startswith(("http://", "https://")) else None
    elif source.startswith(("file://", "s3://")):
        store = open_store(source, endpoint_url)
    else:
        typer.echo(f"error: {source!r} is neither a config file nor a store URI; pass a YAML config or file://PATH / s3://BUCKET/PREFIX", err=True)
        raise typer.Exit(2)
    typer.echo(f"OpenForge viewer on http://{host}:{port}{start} (store {store.root}); Ctrl-C stops it")
    web.run_app(Viewer(store, mlflow_url).app(), host=host, port=port, print=None)
