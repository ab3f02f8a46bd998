"""Warm starts: `openforge` containers forked from a server that has already imported them.

Why: a fresh `openforge` process spends 0.6 s (the CLI) to 10 s (the trainer: torch,
transformers, veRL) importing before it does any work, and a quickstart iteration starts
about forty of them (two per rollout), so on a small machine start-up was the larger
part of an iteration (docs/benchmarks.md, "Pipeline overhead"). The server
(``_warm_server.py``) imports all of it once per run; each container is then a fork that
sets its own session, cwd, environment and log, exactly as the process runtime's
``Popen`` would. What differs from a fresh interpreter: modules are imported with the
environment of the run, not the container's (the manifests set only ``OPENFORGE_*``
variables, which are read at run time), and the server must be ready: until it is,
containers start cold, so the first steps of a run never wait for it.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from components.core.services import openforge_argv

_SPAWN_TIMEOUT_S = 30.0
_LOST_POLL_S = 0.1


class WarmStarts:
    """A warm-start server for one run; ``spawn`` forks containers from it once it is ready.

    It imports ``modules`` once, and each fork calls ``entry`` (``module:function``) with
    the container's `openforge` arguments. Both come from the caller: the executor runs
    manifests and never imports the CLI above it.
    """

    def __init__(self, modules: Sequence[str], entry: str, log_path: Path | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="openforge-warm-")
        self._socket = str(Path(self._dir.name) / "server.sock")
        self._prefix = openforge_argv()
        self._ready = threading.Event()
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
        log = log_path.open("ab") if log_path is not None else subprocess.DEVNULL
        self._server = subprocess.Popen(
            [sys.executable, "-m", "pipelines.executor._warm_server", self._socket, entry, *modules],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches the run, which stops the server itself
        )
        if log_path is not None:
            log.close()  # the server holds its own copy
        threading.Thread(target=self._await_ready, name="warm-start-ready", daemon=True).start()

    def _await_ready(self) -> None:
        assert self._server.stdout is not None
        if self._server.stdout.readline().strip() == b"ready":
            self._ready.set()

    def wait_ready(self, timeout_s: float) -> bool:
        return self._ready.wait(timeout_s)

    def accepts(self, argv: Sequence[str]) -> bool:
        """Whether ``argv`` is this checkout's `openforge` and the server can start it now."""
        return (
            self._ready.is_set()
            and self._server.poll() is None
            and list(argv[: len(self._prefix)]) == self._prefix
        )

    def spawn(self, argv: Sequence[str], cwd: Path, env: dict[str, str], log_path: Path) -> "WarmProcess":
        """Start ``argv`` (an `openforge` command line) as a fork of the server."""
        request = {"args": list(argv[len(self._prefix) :]), "cwd": str(cwd), "env": env, "log": str(log_path)}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lines = _Lines(conn)
        try:
            conn.connect(self._socket)
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = lines.next(_SPAWN_TIMEOUT_S)
        except OSError as exc:
            lines.close()
            raise OSError(f"warm-start server: {exc}") from None
        if reply is None or "pid" not in reply:
            lines.close()
            raise OSError(f"warm-start server refused the start: {reply}")
        return WarmProcess(reply["pid"], lines)

    def close(self) -> None:
        if self._server.poll() is None:
            self._server.terminate()
            try:
                self._server.wait(10)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
        if self._server.stdout is not None:
            self._server.stdout.close()
        self._dir.cleanup()

    def __enter__(self) -> "WarmStarts":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WarmProcess:
    """The part of ``subprocess.Popen`` the executor uses, for a child of the warm-start server."""

    def __init__(self, pid: int, lines: "_Lines") -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.args = ["openforge", f"(warm start, pid {pid})"]
        self._lines: _Lines | None = lines

    def poll(self) -> int | None:
        return self._update(0.0)

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if end is None else max(0.0, end - time.monotonic())
            code = self._update(left)
            if code is not None:
                return code
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)

    def _update(self, timeout_s: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        if self._lines is None:
            return self._orphan_code(timeout_s)
        try:
            message = self._lines.next(timeout_s)
        except ConnectionError:  # the server died: the child lives on as an orphan, or not
            self._lines.close()
            self._lines = None
            return self._orphan_code(0.0)
        if message is not None:
            self.returncode = int(message["exit"])
            self._lines.close()
            self._lines = None
        return self.returncode

    def _orphan_code(self, timeout_s: float | None) -> int | None:
        """With no server to report it, the exit code is unknown: -9 once the child is gone."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            self.returncode = -9
            return self.returncode
        time.sleep(_LOST_POLL_S if timeout_s is None else min(timeout_s, _LOST_POLL_S))
        return None

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)


class _Lines:
    """JSON lines from the server over one connection, read without blocking past a timeout."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

    def next(self, timeout_s: float | None) -> dict | None:
        """The next message; None when none arrived within ``timeout_s``."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = None if end is None else max(0.0, end - time.monotonic())
            with selectors.DefaultSelector() as selector:
                selector.register(self._conn, selectors.EVENT_READ)
                if not selector.select(left):
                    return None
            chunk = self._conn.recv(4096)
            if not chunk:
                raise ConnectionError("the warm-start server closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self._conn.close()
