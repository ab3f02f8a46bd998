"""The egress sink: a loopback HTTP proxy that refuses everything and remembers what was asked.

A harness runs with ``HTTPS_PROXY``/``HTTP_PROXY`` (and, for Node, ``NODE_USE_ENV_PROXY``)
pointing here, so every request it would send to an outside host (telemetry, update
checks, its vendor's feature flags) arrives at this sink instead of leaving the machine.
The sink answers ``403`` to each one at once: a definite "no" that harnesses treat as
an ordinary failed side request, where a closed port would look like a network outage
and invite retries. Each attempt is recorded (method and target), so a rollout can
report, and a test can prove, what the harness tried to reach.
"""

from __future__ import annotations

import socketserver
import threading
from dataclasses import dataclass
from types import TracebackType

_REFUSAL = (
    b"HTTP/1.1 403 Forbidden\r\n"
    b"Content-Type: text/plain\r\n"
    b"Content-Length: 47\r\n"
    b"Connection: close\r\n\r\n"
    b"openforge: rollouts may not reach outside hosts"
)
_MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class EgressAttempt:
    method: str  # CONNECT for HTTPS, GET/POST/... for plain HTTP through the proxy
    target: str  # host:port (CONNECT) or the absolute URL (plain HTTP)


class _Handler(socketserver.BaseRequestHandler):
    server: "_Server"

    def handle(self) -> None:
        self.request.settimeout(5.0)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < _MAX_HEADER_BYTES:
                chunk = self.request.recv(4096)
                if not chunk:
                    break
                head += chunk
        except OSError:
            pass  # a client that hangs or resets still counts as an attempt, if it said anything
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        if len(parts) >= 2:
            self.server.record(EgressAttempt(method=parts[0], target=parts[1]))
        try:
            self.request.sendall(_REFUSAL)
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.attempts: list[EgressAttempt] = []
        self._lock = threading.Lock()

    def record(self, attempt: EgressAttempt) -> None:
        with self._lock:
            self.attempts.append(attempt)


class EgressSink:
    """Run the refusing proxy for the duration of a ``with`` block (one rollout)."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, name="egress-sink", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def attempts(self) -> list[EgressAttempt]:
        with self._server._lock:
            return list(self._server.attempts)

    def proxy_env(self, no_proxy: str = "127.0.0.1,localhost") -> dict[str, str]:
        """The variables that send a harness's outside traffic here and loopback traffic direct."""
        env = {"NO_PROXY": no_proxy, "no_proxy": no_proxy}
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            env[name] = env[name.lower()] = self.url
        # Node's built-in fetch ignores the proxy variables unless told otherwise (Node >= 24).
        env["NODE_USE_ENV_PROXY"] = "1"
        return env

    def __enter__(self) -> "EgressSink":
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
