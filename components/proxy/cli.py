"""``openforge proxy``: parse options, validate them, run the recording proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

SECRET_ENV = "OPENFORGE_PROXY_SECRET"  # same as components.proxy.auth.SECRET_ENV (kept import-free: --help)
UPSTREAM_KEY_ENV = "OPENFORGE_UPSTREAM_API_KEY"
# Set by the sandbox runtime, never written in a manifest: the pod's channel to the engine.
UPSTREAM_SOCKET_ENV = "OPENFORGE_UPSTREAM_SOCKET"


def proxy_command(
    upstream: Annotated[str, typer.Option(help="Engine base URL, e.g. http://127.0.0.1:8000 (vLLM or the dev engine).")],
    out: Annotated[Path, typer.Option(help="Directory for the <session_id>.jsonl trajectory files.")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one and prints it).")] = 8100,
    served_model: Annotated[
        Optional[str], typer.Option(help="Model name sent upstream (default: the upstream's first model).")
    ] = None,
    training: Annotated[bool, typer.Option("--training", help="Sample with temperature 1, top_p 1 and record it.")] = False,
    temperature: Annotated[
        float, typer.Option("--temperature", help="With --training: sample at this temperature (algorithm.temperature).")
    ] = 1.0,
    teacher: Annotated[
        bool,
        typer.Option("--teacher", help="Record a teacher for SFT: any OpenAI-compatible endpoint, recorded as text."),
    ] = False,
    teacher_api: Annotated[
        str,
        typer.Option("--teacher-api", help="With --teacher: chat (OpenAI-compatible) or messages (Anthropic Messages, passed through)."),
    ] = "chat",
    sampling_seed: Annotated[
        Optional[str],
        typer.Option(help="With --training: seed each call from this label, its session and its turn (reproducible rollouts)."),
    ] = None,
    token_provenance: Annotated[
        Optional[bool],
        typer.Option(
            "--token-provenance/--no-token-provenance",
            help="Send echoed answers back as the token ids the policy sampled (default: on with --training).",
        ),
    ] = None,
    tool_call_parser: Annotated[
        str, typer.Option(help="Tool-call format the engine serves, by vLLM's name ('none': no parsing); the token path reads answers with it.")
    ] = "hermes",
    reasoning_parser: Annotated[
        Optional[str], typer.Option(help="Reasoning format the engine serves, by vLLM's name (e.g. qwen3).")
    ] = None,
    fsync: Annotated[
        bool, typer.Option("--fsync", help="fsync every record (machine-crash safety; kill -9 is safe without it).")
    ] = False,
    upstream_timeout_s: Annotated[float, typer.Option(help="Seconds to wait for upstream bytes before a 504.")] = 600.0,
    upstream_retries: Annotated[
        int, typer.Option(help="Extra attempts, with backoff, for a request the engine never received.")
    ] = 3,
    max_in_flight: Annotated[int, typer.Option(help="Calls served at once; more get 429 with Retry-After.")] = 256,
    retry_after_s: Annotated[int, typer.Option(help="Retry-After seconds sent with the proxy's own 429s.")] = 1,
    max_request_mb: Annotated[float, typer.Option(help="Largest request body accepted (413 above it).")] = 64.0,
    max_session_mb: Annotated[
        float, typer.Option(help="A session file larger than this takes no more calls (413); its records are kept.")
    ] = 512.0,
    responses_store_mb: Annotated[
        float, typer.Option(help="Memory for Responses conversations kept for previous_response_id (oldest forgotten).")
    ] = 256.0,
    session_secret_file: Annotated[
        Optional[Path],
        typer.Option(
            help=f"File holding the secret that per-session API keys derive from (default: ${SECRET_ENV}); "
            "when set, each call must carry its session's token."
        ),
    ] = None,
) -> None:
    """Serve the OpenAI API from an engine and record every call, token for token.

    The engine's API key, if it has one, comes from $OPENFORGE_UPSTREAM_API_KEY (never an option: argv is public);
    $OPENFORGE_UPSTREAM_SOCKET, when set, is a Unix socket that reaches the engine (a sandboxed pod's channel).
    """
    import os

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
            training_temperature=temperature,
            teacher=teacher,
            teacher_api=teacher_api,
            sampling_seed=sampling_seed,
            token_provenance=token_provenance,
            tool_call_parser=None if tool_call_parser == "none" else tool_call_parser,
            reasoning_parser=reasoning_parser,
            fsync=fsync,
            upstream_timeout_s=upstream_timeout_s,
            upstream_retries=upstream_retries,
            max_in_flight=max_in_flight,
            retry_after_s=retry_after_s,
            max_request_mb=max_request_mb,
            max_session_mb=max_session_mb,
            responses_store_mb=responses_store_mb,
            session_secret=_session_secret(session_secret_file, os.environ.get(SECRET_ENV)),
            upstream_api_key=os.environ.get(UPSTREAM_KEY_ENV) or None,
            upstream_socket=os.environ.get(UPSTREAM_SOCKET_ENV) or None,
        )
    except ValidationError as exc:
        problems = "; ".join(f"--{'-'.join(str(p) for p in e['loc']).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise typer.BadParameter(problems) from None

    from components.proxy.serve import serve_proxy

    serve_proxy(config)


def _session_secret(path: Path | None, from_env: str | None) -> bytes | None:
    # Read here, not passed on argv: a command line is visible to every process on the machine.
    if path is None:
        return from_env.encode() if from_env else None
    try:
        secret = path.read_bytes().strip()  # a trailing newline from `echo` or an editor is not part of it
    except OSError as exc:
        raise typer.BadParameter(f"cannot read the session secret file {path}: {exc.strerror}") from None
    if not secret:
        raise typer.BadParameter(f"session secret file {path} is empty; write e.g. `openssl rand -hex 32` into it")
    return secret
