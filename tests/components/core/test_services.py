"""A started server counts as up only once it holds its own port, never because another program answers there."""

from __future__ import annotations

import http.server
import socket
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
    with pytest.raises(PortTaken, match="another program holds") as failure:
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


def test_a_server_that_dies_on_a_port_another_program_bound_is_given_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A socket bound and silent: what an outgoing connection or a half-started server holds,
    # so the new server exits (address in use) with no impostor answering its health check.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        held = holder.getsockname()[1]
        with pytest.raises(PortTaken, match="another program holds"):
            start_service("late", _http_server_argv(held), port=held, log_dir=tmp_path, health_path="/")
        draws = iter([held])
        fresh = services.free_port
        monkeypatch.setattr(services, "free_port", lambda host="127.0.0.1": next(draws, None) or fresh(host))
        with start_on_free_port("late", _http_server_argv, log_dir=tmp_path, health_path="/") as started:
            assert not started.url.endswith(f":{held}")


def test_free_ports_are_drawn_below_the_ephemeral_range_and_never_twice() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [services.free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(20000 <= port < low for port in ports), ports


def test_a_server_on_its_own_port_starts(tmp_path: Path) -> None:
    with start_on_free_port("own", _http_server_argv, log_dir=tmp_path, health_path="/") as started:
        assert started.process.poll() is None
