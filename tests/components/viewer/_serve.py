"""The viewer for tests: as its own process (``openforge view``), or its app served in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from components.core.services import Service, free_port, openforge_argv, start_service

REPO = Path(__file__).resolve().parents[3]


def serve_and_get(app: Any, paths: list[str]) -> list[httpx.Response]:
    """GET each path, in order, from ``app`` served for the duration of the call."""
    from aiohttp import web

    async def main() -> list[httpx.Response]:
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with httpx.AsyncClient(timeout=120) as client:
                return [await client.get(f"http://127.0.0.1:{port}{path}") for path in paths]
        finally:
            await runner.cleanup()

    return asyncio.run(main())


def start_viewer(uri: str, log_dir: Path, tracking_uri: str | None = None) -> Service:
    """``openforge view URI`` as its own process on a free port (a context manager that stops it)."""
    port = free_port()
    argv = openforge_argv("view", uri, "--port", str(port), *(["--tracking-uri", tracking_uri] if tracking_uri else []))
    return start_service("viewer", argv, port=port, log_dir=log_dir, health_path="/", env={"PYTHONPATH": str(REPO)})
