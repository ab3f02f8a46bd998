"""Serve one seeded app on 127.0.0.1 in a background thread, with the verifier's state endpoint.

A thread, not a process: the rollout runner blocks on the harness subprocess, the app
needs no isolation from the runner, and starting it costs milliseconds. The state endpoint
answers only loopback peers that present the per-run token: the agent's browser is on
loopback too, and must not read the record the verifier judges it by.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aiohttp loads when a site is served: every rollout's runner imports this module
    from aiohttp import web


STATE_PATH = "/_openforge/state"
TOKEN_HEADER = "X-OpenForge-State-Token"
_START_TIMEOUT_S = 10.0


@dataclass
class RunningApp:
    """A served app: where it is, how the verifier reads its state, and how to stop it."""

    url: str
    token: str
    _loop: asyncio.AbstractEventLoop
    _runner: web.AppRunner
    _thread: threading.Thread

    @property
    def state_url(self) -> str:
        return self.url + STATE_PATH

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def serve(add_routes: Callable[[web.Application, dict], None], state: dict) -> RunningApp:
    """Start an app whose handlers ``add_routes`` registers and which records into ``state``."""
    from aiohttp import web

    token = secrets.token_urlsafe(24)
    app = web.Application()
    add_routes(app, state)
    app.router.add_get(STATE_PATH, _state_handler(state, token))
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app, access_log=None)
    started = threading.Event()
    failure: list[BaseException] = []

    async def start() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as exc:  # reported to the caller below
            failure.append(exc)
            started.set()
            return
        started.set()
        loop.run_forever()
        loop.close()

    thread = threading.Thread(target=run, name="openforge-webapp", daemon=True)
    thread.start()
    if not started.wait(_START_TIMEOUT_S) or failure:
        raise RuntimeError(f"web app did not start on 127.0.0.1: {failure[0] if failure else 'timed out'}")
    port = runner.addresses[0][1]
    return RunningApp(url=f"http://127.0.0.1:{port}", token=token, _loop=loop, _runner=runner, _thread=thread)


def _state_handler(state: dict, token: str) -> Callable:
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        peer = ipaddress.ip_address(request.remote or "0.0.0.0")
        if not peer.is_loopback:
            raise web.HTTPForbidden(text="the state endpoint answers loopback only")
        if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
            raise web.HTTPForbidden(text=f"the state endpoint needs the run's {TOKEN_HEADER} header")
        return web.json_response(state, dumps=lambda obj: json.dumps(obj, sort_keys=True))

    return handler
