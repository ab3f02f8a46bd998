"""The one way out of a sandboxed pod: a Unix socket that forwards to one loopback address
(engine replicas: one socket per replica, each to its replica).

A sandboxed rollout pod has a network namespace of its own holding only loopback, so
nothing in it can reach the engine, MLflow, the store or another pod by address. The
runtime starts this forwarder outside the pod (on the host's loopback), listening on a
Unix socket that it binds into the proxy sidecar only; the proxy reaches its upstream
through that socket (``OPENFORGE_UPSTREAM_SOCKET``). Bytes are copied both ways,
unchanged; every connection goes to the one address given, whatever it sends.

    python -m pipelines.executor._channel --socket PATH --to 127.0.0.1:PORT [--socket PATH2 --to ...]
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


def socket_name(replica: int) -> str:
    """The file name of replica ``replica``'s channel socket (replica 0's is the one a pod without replicas has)."""
    return "engine.sock" if replica == 0 else f"engine-{replica}.sock"


def channel_path(replica: int = 0) -> str:
    """Where the proxy sidecar finds replica ``replica``'s channel, in its own file system."""
    return f"/run/openforge/{socket_name(replica)}"


CHANNEL_PATH = channel_path(0)
CHANNEL_CONTAINER = "proxy"  # the pod's one container that reaches the engine (the compiled proxy sidecar)


def channel_sockets(folder: Path, replicas: int) -> list[Path]:
    """The forwarder's side of each replica's channel: its sockets in ``folder``, in replica order."""
    return [folder / socket_name(index) for index in range(replicas)]


def channel_env(replicas: int) -> str:
    """The proxy's ``OPENFORGE_UPSTREAM_SOCKET``: each replica's channel, in its ``--upstream``'s order."""
    return ",".join(channel_path(index) for index in range(replicas))


def channel_targets(sidecars: Sequence[ContainerRun], container: str = CHANNEL_CONTAINER) -> list[str]:
    """``HOST:PORT`` of each address in ``container``'s ``--upstream`` (several for engine replicas,
    comma-separated; one without a scheme takes the first's); [] when the pod has no such container or flag."""
    from urllib.parse import urlsplit

    from components.core.services import ServiceError

    argv = next((run.argv for run in sidecars if run.name == container), [])
    if "--upstream" not in argv[:-1]:
        return []
    targets = []
    for part in argv[argv.index("--upstream") + 1].split(","):
        url = urlsplit(part if "://" in part else f"http://{part}")
        if url.scheme != "http" or not url.hostname:
            raise ServiceError(f"container {container!r}: --upstream {url.geturl()!r} is not an http:// address to forward")
        targets.append(f"{url.hostname}:{url.port or 80}")
    return targets


def forwarder_argv(pairs: Sequence[tuple[Path, str]]) -> list[str]:
    """The command line of a forwarder from each socket to its target (run with this checkout importable)."""
    args = [arg for socket_path, target in pairs for arg in ("--socket", str(socket_path), "--to", target)]
    return [sys.executable, "-m", "pipelines.executor._channel", *args]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipelines.executor._channel", description=__doc__)
    parser.add_argument("--socket", required=True, action="append", help="Unix socket to listen on (replaced if it exists)")
    parser.add_argument("--to", required=True, action="append", help="HOST:PORT every connection to the --socket before it goes to")
    args = parser.parse_args(argv)
    if len(args.socket) != len(args.to):
        parser.error(f"{len(args.socket)} --socket for {len(args.to)} --to: give them in pairs")
    pairs = []
    for socket_path, target in zip(args.socket, args.to):
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            parser.error(f"--to {target!r} is not HOST:PORT")
        pairs.append((socket_path, host, int(port)))
    loop = asyncio.new_event_loop()
    task = loop.create_task(_serve_all(pairs))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        loop.run_until_complete(task)
    for socket_path in args.socket:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
    sys.exit(0)


async def _serve_all(pairs: Sequence[tuple[str, str, int]]) -> None:
    await asyncio.gather(*(serve(socket_path, host, port) for socket_path, host, port in pairs))


if __name__ == "__main__":
    main()
