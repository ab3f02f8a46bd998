"""The proxy's HTTP application: routes, JSON errors for every failure, and wiring."""

from __future__ import annotations

import logging
from functools import partial
from typing import Awaitable, Callable

import orjson
from aiohttp import web

from components.core.rollout_identity import ATTEMPT_ROUTE, SESSION_QUERY, SESSION_ROUTE, route_parts
from components.engine.cut_route import CUT_ROUTE, PROXY_CUT_ROUTE
from components.proxy.calls import CallHandler
from components.proxy.config import ProxyConfig
from components.proxy.errors import ProxyError, error_response, upstream_status_error
from components.proxy.recorder import Recorder
from components.proxy.sessions import call_session, check_path_attempt, check_path_session_id
from components.proxy.surfaces import SURFACES
from components.proxy.upstream import Upstream, models_list_body

_log = logging.getLogger(__name__)
_ROUTES_HELP = ", ".join(
    [f"POST {surface.path} (also under /s/<session_id> and /s/<session_id>/a/<attempt>)" for surface in SURFACES]
    + ["GET /v1/models", "POST /flush", "GET /health[?upstream=1]"]
)


class _Proxy:
    """Per-application state; the upstream client is created once the event loop runs."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.recorder = Recorder(config.out, max_open_files=config.max_open_files, fsync_each=config.fsync)
        self.upstream: Upstream | None = None
        self.calls: CallHandler | None = None

    async def start(self, app: web.Application) -> None:
        self.upstream = Upstream(self.config)
        self.calls = CallHandler(self.config, self.upstream, self.recorder)

    async def stop(self, app: web.Application) -> None:
        if self.upstream is not None:
            await self.upstream.close()
        await self.recorder.sync()  # a clean shutdown leaves every record on stable storage
        self.recorder.close()

    async def models(self, request: web.Request) -> web.Response:
        path_session, path_attempt = route_parts(request.match_info)
        session_id = call_session(path_session, request.headers)
        self.calls.admission.auth.check(request.headers, session_id)
        if path_attempt is not None:
            check_path_attempt(path_attempt)
        try:
            status, body = await self.upstream.get_models()
        except ProxyError:
            if self.config.served_model is None:
                raise
            return _json(models_list_body(self.config.served_model))
        if status != 200:
            raise upstream_status_error(status, body, self.config.upstream, None)
        return web.Response(body=body, content_type="application/json")

    async def cut(self, _request: web.Request) -> web.Response:
        # The runner asks its proxy, the proxy the engine: the one channel a rollout has to the serve step.
        try:
            status, body = await self.upstream.get_cut()
        except ProxyError as err:
            return _json({"cut": False, "error": err.message}, status=502)
        if status != 200:  # an engine without the route never cuts
            return _json({"cut": False, "error": f"upstream {self.config.upstream} answered HTTP {status} to GET {CUT_ROUTE}"})
        return web.Response(body=body, content_type="application/json")

    async def flush(self, request: web.Request) -> web.Response:
        session = request.query.get(SESSION_QUERY)
        ids = None if session is None else [check_path_session_id(session)]
        if self.calls.admission.auth.enabled:
            if ids is None:  # a flush of every session would need every session's token
                raise ProxyError(
                    403,
                    "with session tokens on, /flush takes one session: POST /flush?session=<id> with its token",
                    code="flush_needs_session",
                )
            self.calls.admission.auth.check(request.headers, ids[0])
        await self.recorder.sync(ids)
        counts = self.recorder.counts() if ids is None else {ids[0]: self.recorder.count(ids[0])}
        return _json({"sessions": counts})

    async def health(self, request: web.Request) -> web.Response:
        if request.query.get("upstream") == "1":
            # The rollout runner waits on this before retrying a rollout the engine failed:
            # the proxy being up says nothing about the engine behind it.
            problem = await self._upstream_problem()
            if problem is not None:
                return _json({"ok": False, "upstream": self.config.upstream, "error": problem}, status=503)
        return _json(
            {
                "ok": True,
                "upstream": self.config.upstream,
                "out": str(self.config.out),
                "training": self.config.training,
                "token_provenance": self.config.provenance_on,
                "sessions": len(self.recorder.counts()),
                "calls_recorded": self.recorder.calls_recorded,
                "torn_lines_repaired": self.recorder.torn_lines_repaired,
                **self.calls.restorer.counters(),
                **self.calls.admission.counters(),
            }
        )


    async def _upstream_problem(self) -> str | None:
        try:
            status, _ = await self.upstream.get_models()
        except ProxyError as err:
            return f"upstream {self.config.upstream} is not reachable: {err.message}"
        if status != 200:
            return f"upstream {self.config.upstream} answered HTTP {status} to GET /v1/models"
        return None


def build_app(config: ProxyConfig) -> web.Application:
    """The aiohttp application of one recording proxy (start it with any aiohttp runner)."""
    proxy = _Proxy(config)
    app = web.Application(middlewares=[_json_errors], client_max_size=int(config.max_request_mb * 2**20))
    app.on_startup.append(proxy.start)
    app.on_cleanup.append(proxy.stop)
    for surface in SURFACES:
        handler = partial(_call_route, proxy, surface)
        app.router.add_post(surface.path, handler)
        app.router.add_post(SESSION_ROUTE + surface.path, handler)
        app.router.add_post(ATTEMPT_ROUTE + surface.path, handler)
    app.router.add_get("/v1/models", proxy.models)
    app.router.add_get(SESSION_ROUTE + "/v1/models", proxy.models)
    app.router.add_get(ATTEMPT_ROUTE + "/v1/models", proxy.models)
    app.router.add_post("/flush", proxy.flush)
    app.router.add_get(PROXY_CUT_ROUTE, proxy.cut)
    app.router.add_get("/health", proxy.health)
    return app


async def _call_route(proxy: _Proxy, surface, request: web.Request) -> web.StreamResponse:
    return await proxy.calls.handle(request, surface)


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error leaves as OpenAI-shaped JSON; no request can take the proxy down."""
    try:
        return await handler(request)
    except ProxyError as err:
        return error_response(err)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_response(_http_error(request, exc))
    except Exception as exc:
        _log.exception("unexpected error serving %s %s", request.method, request.path)
        return error_response(ProxyError(500, f"internal proxy error while serving {request.path}: {exc!r}"))


def _http_error(request: web.Request, exc: web.HTTPException) -> ProxyError:
    if exc.status == 404:
        return ProxyError(404, f"no route for {request.method} {request.path}; the proxy serves {_ROUTES_HELP}")
    if exc.status == 405:
        allowed = exc.headers.get("Allow", "")
        return ProxyError(
            405, f"{request.method} is not allowed on {request.path}; use {allowed}", headers={"Allow": allowed}
        )
    if exc.status == 413:
        return ProxyError(413, f"{exc.text}; raise --max-request-mb to accept larger requests")
    return ProxyError(exc.status, f"{exc.reason}: {exc.text or ''}".strip(": "))


def _json(body: dict, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
