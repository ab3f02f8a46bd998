"""The one way out of a sandboxed pod: a Unix socket that forwards to one loopback address.

A sandboxed rollout pod has a network namespace of its own holding only loopback, so
nothing in it can reach the engine, MLflow, the store or another pod by address. The
runtime starts this forwarder outside the pod (on the host's loopback), listening on a
Unix socket that it binds into the proxy sidecar only; the proxy reaches its upstream
through that socket (``OPENFORGE_UPSTREAM_SOCKET``). Bytes are copied both ways,
unchanged; every connection goes to the one address given, whatever it sends.

    python -m pipelines.executor._channel --socket PATH --to 127.0.0.1:PORT
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the forwarder itself (python -m) imports nothing of the project
    from pipelines.executor._sandbox import ContainerRun

_CHUNK = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _forward(host: str, port: int, inner: asyncio.StreamReader, inner_writer: asyncio.StreamWriter) -> None:
    try:
        outer, outer_writer = await asyncio.open_connection(host, port)
    except OSError:
        inner_writer.close()  # the engine is down: the proxy sees a refused call and retries
        return
    try:
        await asyncio.gather(_pipe(inner, outer_writer), _pipe(outer, inner_writer))
    finally:
        for writer in (inner_writer, outer_writer):
            writer.close()


async def serve(socket_path: str, host: str, port: int, ready: asyncio.Event | None = None) -> None:
    """Forward each connection to ``socket_path`` to ``host:port`` until cancelled."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)
    server = await asyncio.start_unix_server(lambda r, w: _forward(host, port, r, w), path=socket_path)
    # The sandboxed proxy runs as another user; the socket's folder (mode 0700) is what
    # keeps everyone else on the host out, and inside the sandbox only the proxy has it.
    os.chmod(socket_path, 0o666)
    print(f"forwarding {socket_path} -> {host}:{port}", flush=True)
    if ready is not None:
        ready.set()
    async with server:
        await server.serve_forever()


CHANNEL_PATH = "/run/openforge/engine.sock"  # where the proxy sidecar finds the channel, in its own file system


CHANNEL_CONTAINER = "proxy"  # the pod's one container that reaches the engine (the compiled proxy sidecar)


def channel_target(sidecars: Sequence[ContainerRun], container: str = CHANNEL_CONTAINER) -> str | None:
    """``HOST:PORT`` of ``container``'s ``--upstream``; None when the pod has no such container or flag."""
    from urllib.parse import urlsplit

    from components.core.services import ServiceError

    argv = next((run.argv for run in sidecars if run.name == container), [])
    if "--upstream" not in argv[:-1]:
        return None
    url = urlsplit(argv[argv.index("--upstream") + 1])
    if url.scheme != "http" or not url.hostname:
        raise ServiceError(f"container {container!r}: --upstream {url.geturl()!r} is not an http:// address to forward")
    return f"{url.hostname}:{url.port or 80}"


def forwarder_argv(socket_path: Path, target: str) -> list[str]:
    """The command line of a forwarder from ``socket_path`` to ``target`` (run with this checkout importable)."""
    return [sys.executable, "-m", "pipelines.executor._channel", "--socket", str(socket_path), "--to", target]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipelines.executor._channel", description=__doc__)
    parser.add_argument("--socket", required=True, help="Unix socket to listen on (replaced if it exists)")
    parser.add_argument("--to", required=True, help="HOST:PORT every connection goes to")
    args = parser.parse_args(argv)
    host, _, port = args.to.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--to {args.to!r} is not HOST:PORT")
    loop = asyncio.new_event_loop()
    task = loop.create_task(serve(args.socket, host, int(port)))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(args.socket)
    sys.exit(0)


if __name__ == "__main__":
    main()
