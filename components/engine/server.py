"""Start the dev engine: load one checkpoint, serve it over HTTP until told to stop."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
from pathlib import Path
from typing import Any

from aiohttp import web

from components.core.checkpoints import CHECKPOINT_INFO
from components.core.choices import ChoiceBook, load_choice_book
from components.core.parsers import ChatParsers
from components.core.rollout_identity import SESSION_HEADER
from components.engine._engine import DevEngine
from components.engine._kv_cache import DEFAULT_BUDGET_MIB, DEFAULT_MAX_ENTRIES, UnsupportedModel
from components.engine._protocol import ApiError
from components.engine._routes import Routes, json_response
from components.engine._script import Script, load_script
from components.engine.cut_route import CUT_ROUTE, read_cut_file

_MAX_BODY_BYTES = 64 * 1024 * 1024  # harness prompts with long histories are large
_log = logging.getLogger("openforge.engine")


class EngineStartError(ValueError):
    """The engine cannot start with these settings; the message says what to fix."""


def chat_parsers(tool_call_parser: str | None, reasoning_parser: str | None) -> ChatParsers:
    """The answer formats by vLLM's names; an unknown name stops the engine with the supported ones."""
    from components.core.parsers import check_reasoning_parser, check_tool_call_parser

    try:
        if tool_call_parser is not None:
            check_tool_call_parser(tool_call_parser)
        if reasoning_parser is not None:
            check_reasoning_parser(reasoning_parser)
    except ValueError as exc:
        raise EngineStartError(str(exc)) from None
    return ChatParsers(tool_call_parser, reasoning_parser)


def policy_version_of(model_dir: Path) -> str:
    """The checkpoint's ``policy_version`` from its manifest, else the directory's name."""
    manifest = model_dir / CHECKPOINT_INFO
    if manifest.is_file():
        try:
            version = json.loads(manifest.read_text()).get("policy_version")
        except (json.JSONDecodeError, AttributeError) as exc:
            raise EngineStartError(f"{manifest} is not a JSON object: {exc}") from None
        if version is not None:
            return str(version)
    return model_dir.resolve().name


@web.middleware
async def _errors_as_json(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every failure answers in vLLM's error shape; nothing a client sends stops the server."""
    session = request.headers.get(SESSION_HEADER)
    if session is not None:  # the proxy names each call's session: the log shows where sessions went
        _log.info("%s %s for session %s", request.method, request.path, session[:200])
    try:
        return await handler(request)
    except ApiError as exc:
        return json_response(exc.body(), status=exc.status)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = f"{exc.reason}: {request.method} {request.path}"
        return json_response(ApiError(message, status=exc.status).body(), status=exc.status)
    except Exception as exc:
        _log.exception("request %s %s failed", request.method, request.path)
        return json_response(ApiError(f"internal error: {exc}", status=500).body(), status=500)


API_KEY_ENV = "VLLM_API_KEY"  # vLLM's: with it set, /v1 requests must carry it as a Bearer token


def _require_key(key: str) -> Any:
    expected = f"Bearer {key}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Any) -> web.StreamResponse:
        # As vLLM: the API under /v1 is guarded, the health and metrics probes are not.
        given = request.headers.get("Authorization", "").encode()
        if request.path.startswith("/v1") and not secrets.compare_digest(given, expected):
            return json_response(ApiError("Unauthorized", status=401).body(), status=401)
        return await handler(request)

    return check


def build_app(
    model_dir: Path,
    *,
    api_key: str | None = None,
    served_model_name: str | None = None,
    script: Script | None = None,
    choices: ChoiceBook | None = None,
    threads: int = 2,
    max_model_len: int | None = None,
    unconstrained_json: bool = False,
    kv_cache_mib: int = DEFAULT_BUDGET_MIB,
    kv_cache_entries: int = DEFAULT_MAX_ENTRIES,
    parsers: ChatParsers = ChatParsers(),
    cut_file: Path | None = None,
) -> web.Application:
    """Load the model and return the ready aiohttp application.

    ``cut_file``: the serve step's straggler-cut state, answered at ``CUT_ROUTE`` (cut_route.py).
    """
    from components.engine._generation import ModelRunner

    if script is not None and choices is not None:
        raise EngineStartError("scripted mode and choice mode exclude each other: give --script or --choices")
    if not (model_dir / "config.json").is_file():
        raise EngineStartError(
            f"{model_dir} is not a model directory (no config.json); create one with "
            "`openforge model init-tiny DIR`"
        )
    policy_version = policy_version_of(model_dir)
    if kv_cache_mib < 0 or kv_cache_entries < 1:
        raise EngineStartError(
            f"--kv-cache-mib must be >= 0 (got {kv_cache_mib}) and --kv-cache-entries >= 1 (got {kv_cache_entries})"
        )
    try:
        runner = ModelRunner(
            model_dir, threads=threads, cache_budget_bytes=kv_cache_mib * 2**20, cache_entries=kv_cache_entries
        )
    except UnsupportedModel as exc:
        raise EngineStartError(str(exc)) from None
    if max_model_len is not None:
        if not 0 < max_model_len <= runner.max_model_len:
            raise EngineStartError(
                f"--max-model-len {max_model_len} must be between 1 and the model's {runner.max_model_len}"
            )
        runner.max_model_len = max_model_len
    engine = DevEngine(runner)
    guards = [_require_key(api_key)] if api_key else []
    app = web.Application(middlewares=[_errors_as_json, *guards], client_max_size=_MAX_BODY_BYTES)
    Routes(
        engine,
        served_model_name=served_model_name or str(model_dir),
        model_root=str(model_dir),
        policy_version=policy_version,
        max_model_len=runner.max_model_len,
        script=script,
        choices=choices,
        unconstrained_json=unconstrained_json,
        parsers=parsers,
    ).register(app)

    async def cut_state(_request: web.Request) -> web.Response:
        return web.Response(body=read_cut_file(cut_file), content_type="application/json")

    app.router.add_get(CUT_ROUTE, cut_state)
    app.on_cleanup.append(lambda _app: _close(engine))
    return app


async def _close(engine: DevEngine) -> None:
    engine.close()


def serve(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    script: str | Path | None = None,
    choices: str | Path | None = None,
    served_model_name: str | None = None,
    threads: int = 2,
    max_model_len: int | None = None,
    unconstrained_json: bool = False,
    kv_cache_mib: int = DEFAULT_BUDGET_MIB,
    kv_cache_entries: int = DEFAULT_MAX_ENTRIES,
    parsers: ChatParsers = ChatParsers(),
    cut_file: Path | None = None,
) -> None:
    """Serve ``model_dir`` on ``host:port`` until SIGINT or SIGTERM.

    Prints one line naming the URL once the model is loaded and the port is listening.
    """
    log_to_stderr()
    loaded_script = load_script(script) if script is not None else None
    app = build_app(
        Path(model_dir),
        api_key=os.environ.get(API_KEY_ENV) or None,
        served_model_name=served_model_name,
        script=loaded_script,
        choices=load_choice_book(choices) if choices is not None else None,
        threads=threads,
        max_model_len=max_model_len,
        unconstrained_json=unconstrained_json,
        kv_cache_mib=kv_cache_mib,
        kv_cache_entries=kv_cache_entries,
        parsers=parsers,
        cut_file=cut_file,
    )
    _run(_serve_until_signalled(app, host, port))


def log_to_stderr() -> None:
    """The engine's own lines (choices drawn, failed requests) go to its log, at INFO.

    ``force``: a module imported earlier may have configured the root logger already
    (veRL's core_algos sets it to WARNING), and a warm-started engine is a fork of a
    process that imported it; without it every draw of choice mode went unlogged there.
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", force=True)


async def _serve_until_signalled(app: web.Application, host: str, port: int) -> None:
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_port = runner.addresses[0][1]
    print(f"openforge dev engine listening on http://{host}:{bound_port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def _run(main: Any) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)
