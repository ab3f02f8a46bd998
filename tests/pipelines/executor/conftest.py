"""Servers on the host's loopback that the executor's pods must (or must not) reach."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest


class _Answering(http.server.BaseHTTPRequestHandler):
    """Answers every GET with its own port and the path: who was reached, and with what."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = f"{self.server.server_port}:{self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def host_ports() -> Iterator[tuple[int, int]]:
    """Two servers on the host's loopback (an engine and MLflow, or two engine replicas): their ports."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield servers[0].server_address[1], servers[1].server_address[1]
    for server in servers:
        server.shutdown()
