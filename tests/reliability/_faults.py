"""Shared pieces of the fault-injection suite (docs/reliability.md).

A proxy subprocess started in a chosen working directory (so a test can prove it wrote
nothing outside its output directory), upstreams served from a background loop, a raw
HTTP/1.1 client that sends bytes no well-behaved client library would, and snapshots of
a directory tree. Every server listens on 127.0.0.1 on a port the OS picked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from aiohttp import web

from benchmarks.proxy.fast_upstream import full_body, stream_events
from components.core.services import Service, ServiceError, free_port, wait_healthy
from components.core.trajectory import RecordedCall, read_session
from tests.components.proxy.conftest import LoopThread

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
# What the slow upstream answers: token ids 1000.. (fast_upstream's shape), so a record's
# completion can be compared with the whole answer to tell a finished call from a cut one.
COMPLETION_TOKENS = 8
FULL_COMPLETION = list(range(1000, 1000 + COMPLETION_TOKENS))


def start_proxy_process(
    upstream: str, out: Path, log_dir: Path, *, cwd: Path | None = None, name: str = "proxy", extra: tuple[str, ...] = ()
) -> Service:
    """``python -m components.proxy`` in its own process group, ``cwd`` as its working directory.

    Not ``components.core.services.start_service``: that one runs in the caller's directory,
    and the hostile-input tests need the proxy's relative paths to land in a sandbox.
    """
    port = free_port()
    argv = [sys.executable, "-m", "components.proxy", "--upstream", upstream, "--out", str(out.resolve()),
            "--port", str(port), *extra]  # fmt: skip
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = log_path.open("ab")  # appended: a restarted proxy keeps its predecessor's log
    process = subprocess.Popen(
        argv, cwd=cwd or REPO, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
    )  # fmt: skip
    service = Service(name=name, url=f"http://{HOST}:{port}", process=process, log_path=log_path, _log=log)
    try:
        wait_healthy(service.url + "/health", 60.0, process, port=port)
    except ServiceError as exc:
        service.stop()
        raise ServiceError(f"{name}: {exc}\n--- {log_path} ---\n{service.log_tail()}") from None
    return service


def kill_9(service: Service) -> None:
    """SIGKILL the proxy's process group: no shutdown hook, no flush, no last write."""
    try:
        os.killpg(service.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    service.process.wait(10)
    service.stop()  # closes the log handle


class BackgroundServer:
    """An aiohttp application served from a loop in a daemon thread (the test's own loop stays free)."""

    def __init__(self, app: web.Application) -> None:
        self._thread = LoopThread()
        self._runner = web.AppRunner(app, access_log=None)
        self.url = self._thread.run(self._start())

    async def _start(self) -> str:
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._thread.run(self._runner.cleanup())
        self._thread.close()


def slow_upstream(chunk_delay_s: float, answer_delay_s: float, seed: int = 0) -> web.Application:
    """A vLLM-shaped engine (fast_upstream's answers) that takes its time.

    Streams pause about ``chunk_delay_s`` between events, so a kill lands mid-stream; plain
    answers come after about ``answer_delay_s``. Each call's pace is drawn from +-50% around
    those values (seeded): calls started together then end at scattered moments, so a kill finds
    some call at every phase, its very last bytes included. It never fails: every fault is
    the test's own.
    """
    rng = random.Random(seed)
    body = full_body(16, COMPLETION_TOKENS)
    head, tail = stream_events(16, COMPLETION_TOKENS)
    events = [event + b"\n\n" for event in head.split(b"\n\n") if event]

    async def chat(request: web.Request) -> web.StreamResponse:
        payload = await request.json()
        pace = rng.uniform(0.5, 1.5)  # per call: whole calls are shorter or longer
        if not payload.get("stream"):
            await asyncio.sleep(answer_delay_s * pace)
            return web.Response(body=body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in events:
            await resp.write(event)
            await asyncio.sleep(chunk_delay_s * pace)
        await resp.write(tail if (payload.get("stream_options") or {}).get("include_usage") else b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "bench-model", "object": "model"}]})

    app = web.Application(client_max_size=2**30)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    return app


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes


def raw_request(
    port: int, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes, timeout_s: float = 10.0
) -> RawResponse:
    """One HTTP/1.1 request written byte for byte (no client library rewrites the path or headers)."""
    head = [method + b" " + target + b" HTTP/1.1", b"Host: " + HOST.encode(), b"Connection: close"]
    head += [name + b": " + value for name, value in headers]
    head.append(b"Content-Length: " + str(len(body)).encode())
    with socket.create_connection((HOST, port), timeout=timeout_s) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        chunks = []
        while data := sock.recv(1 << 16):
            chunks.append(data)
    raw = b"".join(chunks)
    header_blob, _, payload = raw.partition(b"\r\n\r\n")
    lines = header_blob.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    if fields.get("transfer-encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    return RawResponse(status, fields, payload)


def _dechunk(data: bytes) -> bytes:
    out, pos = [], 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2 : end + 2 + size])
        pos = end + 2 + size + 2


@dataclass
class Sandbox:
    """A proxy subprocess whose working directory and ``--out`` sit three folders below ``root``."""

    proxy: Service
    root: Path
    out: Path
    before: set[str]  # tree(root) once the proxy was up

    @property
    def port(self) -> int:
        return int(self.proxy.url.rsplit(":", 1)[1])

    def request(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> RawResponse:
        return raw_request(self.port, method, target, headers, body)

    def created_outside_out(self) -> list[str]:
        """Paths that appeared under ``root`` other than session files directly in ``out``."""
        out = str(self.out.relative_to(self.root))
        created = tree(self.root) - self.before
        return sorted(p for p in created if p != out and not (p.startswith(out + "/") and p.count("/") == out.count("/") + 1
                                                             and p.endswith(".jsonl")))


@contextlib.contextmanager
def sandboxed_proxy(root: Path, upstream: web.Application) -> Iterator[Sandbox]:
    """A proxy over ``upstream`` (served in-process) that can be checked for strays: a path that
    climbs out of ``out`` (``../../x``) still lands below ``root``, where ``tree`` sees it."""
    cwd = root / "a" / "b" / "cwd"
    cwd.mkdir(parents=True)
    engine = BackgroundServer(upstream)
    try:
        proxy = start_proxy_process(engine.url, cwd / "out", root / "logs", cwd=cwd)
        try:
            yield Sandbox(proxy, root, cwd / "out", tree(root))
        finally:
            proxy.stop()
    finally:
        engine.close()


def tree(root: Path) -> set[str]:
    """Every path below ``root`` (files, folders, links), relative: what a process created there."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def read_out_dir(out: Path) -> dict[str, list[RecordedCall]]:
    """Every session file read back (read_session checks each record and contiguous call_index)."""
    return {path.stem: read_session(path) for path in sorted(out.glob("*.jsonl"))}


def file_modes(out: Path) -> dict[str, int]:
    return {path.name: stat.S_IMODE(path.stat().st_mode) for path in out.iterdir()}


def marker_of(call: RecordedCall) -> Any:
    """The marker a test put in its request's last message (chat: ``messages[-1].content``)."""
    messages = call.request.get("messages") or [{}]
    return messages[-1].get("content")
