"""``openforge model ...`` and ``openforge engine ...``: thin doors onto the engine package.

Heavy imports (torch, transformers, aiohttp) happen inside the commands so that
``openforge --help`` answers at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from components.engine._kv_cache import DEFAULT_BUDGET_MIB, DEFAULT_MAX_ENTRIES  # no torch: --help stays fast

if TYPE_CHECKING:
    from components.core.parsers import ChatParsers
    from components.core.config import ExperimentConfig
    from components.core.storage import ArtifactStore

model_app = typer.Typer(help="Create models for the dev path.", no_args_is_help=True)
engine_app = typer.Typer(help="Run the dev inference engine (vLLM's API on a CPU).", no_args_is_help=True)


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
) -> None:
    """Write a tiny random-weights Qwen2 model with a Qwen2.5 chat template."""
    from components.engine.tiny_model import init_tiny_model

    path = init_tiny_model(out_dir, seed=seed)
    typer.echo(f"wrote tiny model (seed {seed}) to {path}")


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
    """Serve one checkpoint with vLLM's OpenAI-compatible API (chat, completions, tokenize)."""
    from components.core.choices import ChoiceBookError
    from components.engine._script import ScriptError
    from components.engine.server import EngineStartError, serve

    try:
        parsers = _parsers(None if tool_call_parser == "none" else tool_call_parser, reasoning_parser)
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


def serve_step_command(
    iteration: int = typer.Option(..., "--iteration", min=0, help="The iteration whose policy to serve."),
    host: str = typer.Option("0.0.0.0", "--host", help="Interface to listen on (the pod's, on a cluster)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on."),
) -> None:
    """Serve the newest committed checkpoint <= ITERATION (committing the initial policy first)."""
    import tempfile

    from components.core.config import config_for_step
    from components.core.storage import open_store
    from components.engine.readiness import EngineNotReady
    from components.engine.server import serve
    from components.engine.step import prepare_policy
    from components.engine.vllm_serve import serve_vllm

    config = config_for_step()
    store = open_store(config.storage.uri, config.storage.endpoint_url)
    with tempfile.TemporaryDirectory(prefix="openforge-policy-") as tmp:
        policy = Path(tmp) / "policy"
        try:
            version = prepare_policy(config, iteration, store, policy)
        except FileNotFoundError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"serving checkpoint {version} for iteration {iteration} ({config.engine.kind})")
        if config.engine.kind == "dev":
            engine = config.engine
            serve(
                policy,
                host=host,
                port=port,
                max_model_len=engine.max_model_len,
                unconstrained_json=engine.dev_unconstrained_json,
                choices=_choice_book(config, iteration, store, Path(tmp)) if engine.dev_mode == "choice" else None,
                parsers=_parsers(engine.vllm.tool_call_parser, engine.vllm.reasoning_parser),
            )
            return
        try:
            code = serve_vllm(config, policy, Path(tmp), host=host, port=port)
        except EngineNotReady as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        # A vLLM stopped by the signal Argo sends the daemon exits by that signal: not a failure.
        raise typer.Exit(code if code > 0 else 0)


def _parsers(tool_call_parser: str | None, reasoning_parser: str | None) -> ChatParsers:
    """The answer formats by vLLM's names; an unknown name stops the engine with the supported ones."""
    from components.core.parsers import ChatParsers, check_reasoning_parser, check_tool_call_parser
    from components.engine.server import EngineStartError

    try:
        if tool_call_parser is not None:
            check_tool_call_parser(tool_call_parser)
        if reasoning_parser is not None:
            check_reasoning_parser(reasoning_parser)
    except ValueError as exc:
        raise EngineStartError(str(exc)) from None
    return ChatParsers(tool_call_parser, reasoning_parser)


def _choice_book(config: ExperimentConfig, iteration: int, store: ArtifactStore, tmp: Path) -> Path:
    """The book the prepare step wrote for this iteration, as a file for the engine."""
    from components.core.storage import run_layout

    key = run_layout(config).choices(iteration)
    if not store.exists(key):
        typer.echo(
            f"error: engine.dev_mode is 'choice' but {store.root}/{key} does not exist; "
            "the prepare step writes it: run prepare for this iteration first",
            err=True,
        )
        raise typer.Exit(2)
    path = tmp / "choices.json"
    path.write_bytes(store.get_bytes(key))
    return path
