"""Start a local server process and wait until it answers, with a deadline.

The quickstart, the local executor and the tests all run the engine and the proxy as
sibling processes on loopback; this is the one place that knows how to start one,
wait for its health endpoint and stop it without leaving orphans.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable


class ServiceError(RuntimeError):
    """A service that exited or never became healthy; the message carries its log tail."""


class PortTaken(ServiceError):
    """Another program listened on the service's port first; a fresh port may succeed."""


# Where free_port draws: above Ray's worker ports (10002-19999 by default) and below the
# kernel's ephemeral range, so no outgoing connection is handed the port between the draw and
# the server's bind (a CI run lost a proxy that way, to a port of 32768-60999).
_DRAW_LOW = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_drawn: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago: drawn at random below the ephemeral range (parallel
    runs rarely draw the same one, and a listener's bind is tried first), never twice in one
    process; the OS picks one where that range is unknown or full."""
    high = _ephemeral_low()
    if high > _DRAW_LOW:
        draws = random.SystemRandom()
        for _ in range(64):
            port = draws.randrange(_DRAW_LOW, high)
            if port not in _drawn and _bindable(host, port):
                _drawn.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class Service:
    """A running server process: its name, URL, log file and the process handle."""

    name: str
    url: str
    process: subprocess.Popen
    log_path: Path
    _log: IO[bytes] | None = field(default=None, repr=False)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after ``timeout``."""
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def wait_healthy(url: str, deadline_s: float, process: subprocess.Popen | None = None, *, port: int | None = None) -> None:
    """Poll ``url`` until it answers 200; fail early if ``process`` exits.

    With ``port``, an answer counts only once ``process`` (or a child) listens on that port:
    ``free_port`` only says a port was free a moment ago, so another program may bind it
    first, answer the health check, and be taken for this one (found by a test run whose
    fixture engine was in fact another test's engine, which that test then killed).
    """
    end = time.monotonic() + deadline_s
    last_error = "no answer yet"
    impostor = False
    while time.monotonic() < end:
        if process is not None and process.poll() is not None:
            if impostor or (port is not None and not _bindable(urllib.parse.urlsplit(url).hostname or "127.0.0.1", port)):
                raise PortTaken(f"exited with code {process.returncode}: another program holds {url}'s port")
            raise ServiceError(f"exited with code {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    if process is None or port is None or _listens(process, port):
                        return
                    impostor, last_error = True, f"port {port} answers, but from another program"
                else:
                    last_error = f"HTTP {resp.status}"
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            last_error = str(exc)
        time.sleep(0.05)
    raise ServiceError(f"{url} did not become healthy within {deadline_s:.0f}s ({last_error})")


def _listens(process: subprocess.Popen, port: int) -> bool:
    """Whether ``process`` or one of its descendants holds a listening TCP socket on ``port``."""
    import psutil  # here: the runner imports this module in images that only start processes

    try:
        root = psutil.Process(process.pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for proc in family:
        try:
            sockets = proc.net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            return True  # cannot tell; the health answer stands, as it did before this check
        if any(sock.status == psutil.CONN_LISTEN and sock.laddr.port == port for sock in sockets):
            return True
    return False


def start_service(
    name: str,
    argv: list[str],
    *,
    port: int,
    log_dir: Path,
    health_path: str = "/health",
    host: str = "127.0.0.1",
    deadline_s: float = 60.0,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Service:
    """Start ``argv`` (in ``cwd``) in its own process group, logging to ``log_dir/<name>.log``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        start_new_session=True,
    )
    service = Service(name=name, url=f"http://{host}:{port}", process=process, log_path=log_path, _log=log)
    try:
        wait_healthy(service.url + health_path, deadline_s, process, port=port)
    except ServiceError as exc:
        service.stop()
        raise type(exc)(f"{name}: {exc}\n--- {log_path} ---\n{service.log_tail()}") from None
    return service


def start_on_free_port(name: str, argv_for: Callable[[int], list[str]], *, attempts: int = 3, **settings: Any) -> Service:
    """``start_service(name, argv_for(port), port=port, **settings)`` on a fresh ``free_port()``,
    drawing another port (up to ``attempts`` in all) when another program took it first."""
    attempt = 1
    while True:
        port = free_port(settings.get("host", "127.0.0.1"))
        try:
            return start_service(name, argv_for(port), port=port, **settings)
        except PortTaken:
            if attempt >= attempts:
                raise
            attempt += 1


def openforge_argv(*args: str) -> list[str]:
    """The command line that runs ``openforge ARGS`` with this interpreter."""
    return [sys.executable, "-m", "pipelines.cli", *args]
