"""``openforge model ...`` and ``openforge engine ...``: thin doors onto the engine package.

Heavy imports (torch, transformers, aiohttp) happen inside the commands so that
``openforge --help`` answers at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from components.core.command_group import command_group
from components.engine._kv_cache import DEFAULT_BUDGET_MIB, DEFAULT_MAX_ENTRIES  # no torch: --help stays fast

model_app = command_group("Create models for the dev path.")
engine_app = command_group("Run the dev inference engine (vLLM's API on a CPU).")


@model_app.callback()
def _model_group() -> None:
    """Create models for the dev path."""


@engine_app.callback()
def _engine_group() -> None:
    """Run the dev inference engine (vLLM's OpenAI-compatible API on a CPU)."""


@model_app.command("init-tiny")
def init_tiny(
    out_dir: Path = typer.Argument(..., help="Directory to write the model into (created if missing)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random weights; the same seed writes the same bytes."),
    vision: bool = typer.Option(
        False, "--vision", help="A Qwen2-VL vision-language model (a small vision tower and its image processor)."
    ),
) -> None:
    """Write a tiny random-weights Qwen2 model with a Qwen2.5 chat template."""
    if vision:
        from components.engine.tiny_vl_model import init_tiny_vl_model

        path = init_tiny_vl_model(out_dir, seed=seed)
    else:
        from components.engine.tiny_model import init_tiny_model

        path = init_tiny_model(out_dir, seed=seed)
    typer.echo(f"wrote tiny {'vision-language ' if vision else ''}model (seed {seed}) to {path}")


@engine_app.command("serve")
def serve_command(
    model: Path = typer.Option(..., "--model", help="Checkpoint directory to serve (HuggingFace layout)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."),
    script: Optional[Path] = typer.Option(
        None, "--script", help='Scripted mode: JSON {"turns": [{"content", "tool_calls"}]} forced turn by turn.'
    ),
    choices: Optional[Path] = typer.Option(
        None,
        "--choices",
        help='Choice mode: JSON {"tasks": [{"task_id", "match", "turns": [[candidate, ...], ...]}]}; '
        "each turn one candidate is drawn by its probability under the model.",
    ),
    served_model_name: Optional[str] = typer.Option(
        None, "--served-model-name", help="Model name clients send (default: the --model path, as vLLM)."
    ),
    threads: int = typer.Option(2, "--threads", min=1, help="torch CPU threads for generation."),
    max_model_len: Optional[int] = typer.Option(
        None, "--max-model-len", min=1, help="Context limit (default: the model's max_position_embeddings)."
    ),
    unconstrained_json: bool = typer.Option(
        False,
        "--unconstrained-json",
        help="Serve response_format json_schema/json_object requests without the constraint (else a 400).",
    ),
    kv_cache_mib: int = typer.Option(
        DEFAULT_BUDGET_MIB, "--kv-cache-mib", min=0, help="Memory for the KV caches of recent conversations (tiny model: 1 KiB/token)."
    ),
    kv_cache_entries: int = typer.Option(
        DEFAULT_MAX_ENTRIES, "--kv-cache-entries", min=1, help="Conversations cached at most (1: only the previous request's)."
    ),
    tool_call_parser: str = typer.Option(
        "hermes", "--tool-call-parser", help="Tool-call format of answers, by vLLM's name ('none': no parsing)."
    ),
    reasoning_parser: Optional[str] = typer.Option(
        None, "--reasoning-parser", help="Reasoning format of answers, by vLLM's name (default: none)."
    ),
) -> None:
    """Serve one checkpoint with vLLM's OpenAI-compatible API (chat, completions, tokenize).

    With $VLLM_API_KEY set, as vLLM, every /v1 request must carry it as a Bearer token.
    """
    from components.core.choices import ChoiceBookError
    from components.engine._script import ScriptError
    from components.engine.server import EngineStartError, chat_parsers, serve

    try:
        parsers = chat_parsers(None if tool_call_parser == "none" else tool_call_parser, reasoning_parser)
        serve(
            model,
            host=host,
            port=port,
            script=script,
            choices=choices,
            served_model_name=served_model_name,
            threads=threads,
            max_model_len=max_model_len,
            unconstrained_json=unconstrained_json,
            kv_cache_mib=kv_cache_mib,
            kv_cache_entries=kv_cache_entries,
            parsers=parsers,
        )
    except (ScriptError, ChoiceBookError, EngineStartError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
