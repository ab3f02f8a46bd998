"""A started server counts as up only once it holds its own port, never because another program answers there."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.core import services
from components.core.services import PortTaken, start_on_free_port, start_service


def _http_server_argv(port: int) -> list[str]:
    return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]


@pytest.fixture
def squatter() -> Iterator[int]:
    """Another program's server answering 200 on a port: what a parallel test's engine looks like."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_a_server_whose_port_another_program_answers_on_is_not_taken_for_up(squatter: int, tmp_path: Path) -> None:
    with pytest.raises(PortTaken, match="another program listens") as failure:
        start_service("late", _http_server_argv(squatter), port=squatter, log_dir=tmp_path, health_path="/")
    assert "Address already in use" in str(failure.value)  # the log tail says why it exited


def test_a_fresh_port_is_drawn_when_the_first_was_taken(
    squatter: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = iter([squatter])
    fresh = services.free_port
    monkeypatch.setattr(services, "free_port", lambda host="127.0.0.1": next(draws, None) or fresh(host))
    started = start_on_free_port("late", _http_server_argv, log_dir=tmp_path, health_path="/")
    try:
        assert not started.url.endswith(f":{squatter}")
        assert started.process.poll() is None
    finally:
        started.stop()


def test_a_server_on_its_own_port_starts(tmp_path: Path) -> None:
    with start_on_free_port("own", _http_server_argv, log_dir=tmp_path, health_path="/") as started:
        assert started.process.poll() is None
