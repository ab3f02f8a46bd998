"""Run a proxy: in the foreground until SIGTERM/SIGINT (the CLI), or in a running loop (tests, executors)."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass

from aiohttp import web

from components.proxy.app import build_app
from components.proxy.config import ProxyConfig


@dataclass
class RunningProxy:
    """A proxy serving inside the current event loop; ``url`` has the port actually bound."""

    url: str
    _runner: web.AppRunner

    async def stop(self) -> None:
        await self._runner.cleanup()


async def start_proxy(config: ProxyConfig) -> RunningProxy:
    """Start serving in the running loop and return once the port is bound."""
    runner = web.AppRunner(build_app(config), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, backlog=2048)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    return RunningProxy(url=f"http://{host}:{port}", _runner=runner)


def serve_proxy(config: ProxyConfig) -> None:
    """Serve until SIGTERM or SIGINT, on uvloop when it is installed."""
    try:
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_serve_until_signalled(config))


async def _serve_until_signalled(config: ProxyConfig) -> None:
    proxy = await start_proxy(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    mode = "training" if config.training else "serving"
    # The first line a supervisor can wait for; it carries the bound port when --port 0.
    print(f"openforge proxy ({mode}) listening on {proxy.url} -> {config.upstream}, recording to {config.out}", flush=True)
    try:
        await stop.wait()
    finally:
        await proxy.stop()
