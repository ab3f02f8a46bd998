"""``openforge proxy``: parse options, validate them, run the recording proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def proxy_command(
    upstream: Annotated[str, typer.Option(help="Engine base URL, e.g. http://127.0.0.1:8000 (vLLM or the dev engine).")],
    out: Annotated[Path, typer.Option(help="Directory for the <session_id>.jsonl trajectory files.")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one and prints it).")] = 8100,
    served_model: Annotated[
        Optional[str], typer.Option(help="Model name sent upstream (default: the upstream's first model).")
    ] = None,
    training: Annotated[bool, typer.Option("--training", help="Sample with temperature 1, top_p 1 and record it.")] = False,
    token_provenance: Annotated[
        Optional[bool],
        typer.Option(
            "--token-provenance/--no-token-provenance",
            help="Send echoed answers back as the token ids the policy sampled (default: on with --training).",
        ),
    ] = None,
    fsync: Annotated[
        bool, typer.Option("--fsync", help="fsync every record (machine-crash safety; kill -9 is safe without it).")
    ] = False,
    upstream_timeout_s: Annotated[float, typer.Option(help="Seconds to wait for upstream bytes before a 504.")] = 600.0,
) -> None:
    """Serve the OpenAI API from an engine and record every call, token for token."""
    from pydantic import ValidationError

    from components.proxy.config import ProxyConfig

    try:
        config = ProxyConfig(
            upstream=upstream,
            out=out,
            host=host,
            port=port,
            served_model=served_model,
            training=training,
            token_provenance=token_provenance,
            fsync=fsync,
            upstream_timeout_s=upstream_timeout_s,
        )
    except ValidationError as exc:
        problems = "; ".join(f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(problems) from None

    from components.proxy.serve import serve_proxy

    serve_proxy(config)
