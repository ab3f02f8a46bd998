"""``openforge view``: serve the trajectory viewer over a run's store (components/viewer/app.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import typer

from components.viewer.links import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_URL, run_path

_SOURCE = "An experiment config (YAML: its storage and run) or a store URI (file://PATH, s3://BUCKET/PREFIX)."


def view_command(
    source: str = typer.Argument(..., help=_SOURCE),
    host: str | None = typer.Option(
        None,
        help=f"Address to listen on (default: the config's tracking.viewer_url, else {DEFAULT_HOST}); keep loopback "
        "unless the store is meant to be shared.",
    ),
    port: int | None = typer.Option(
        None, min=0, max=65535, help=f"Port to listen on (default: the config's tracking.viewer_url, else {DEFAULT_PORT}; 0: a free one)."
    ),
    endpoint_url: str | None = typer.Option(None, help="S3 endpoint for an s3:// store given as a URI."),
    tracking_uri: str | None = typer.Option(
        None, help="MLflow tracking URI of the runs, to link their MLflow runs (a config brings its own)."
    ),
) -> None:
    """Browse runs, iterations, rollouts and what the trainer saw, in a local web page."""
    from aiohttp import web

    from components.core.config import TrackingConfig
    from components.core.storage import open_store
    from components.viewer.app import Viewer

    start, tracking, default = "/", None, urlsplit(DEFAULT_URL)
    if source.endswith((".yaml", ".yml")) or Path(source).is_file():
        from components.core.config import ConfigError, load_config

        try:
            config = load_config(Path(source))
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        store = open_store(config.storage.uri, config.storage.endpoint_url)
        start, tracking = run_path(config.name), config.tracking
        default = urlsplit(config.tracking.viewer_url)  # where the commit step's MLflow links point
        if tracking_uri:
            tracking = tracking.model_copy(update={"uri": tracking_uri})
    elif source.startswith(("file://", "s3://")):
        store = open_store(source, endpoint_url)
        tracking = TrackingConfig(uri=tracking_uri) if tracking_uri else None
    else:
        typer.echo(f"error: {source!r} is neither a config file nor a store URI; pass a YAML config or file://PATH / s3://BUCKET/PREFIX", err=True)
        raise typer.Exit(2)
    host = host if host is not None else default.hostname or DEFAULT_HOST
    port = port if port is not None else default.port or DEFAULT_PORT
    typer.echo(f"OpenForge viewer on http://{host}:{port}{start} (store {store.root}); Ctrl-C stops it")
    web.run_app(Viewer(store, tracking).app(), host=host, port=port, print=None)
