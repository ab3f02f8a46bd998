"""The sandbox's channel to the engine: one forwarder process, one Unix socket per engine
replica, each socket reaching its own replica and nothing else."""

from __future__ import annotations

import http.client
import socket
import subprocess
import time
from pathlib import Path

import pytest

from components.core.services import ServiceError
from pipelines.executor._channel import channel_env, channel_targets, forwarder_argv, socket_name
from pipelines.executor._sandbox import ContainerRun

REPO = Path(__file__).resolve().parents[3]


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("engine", timeout=10)
        self.path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def _get(path: Path) -> str:
    connection = _UnixConnection(path)
    connection.request("GET", "/v1/models")
    return connection.getresponse().read().decode()


def test_one_forwarder_gives_each_replica_its_own_socket(tmp_path: Path, host_ports: tuple[int, int]) -> None:
    sockets = [tmp_path / socket_name(index) for index in range(2)]
    targets = [f"127.0.0.1:{port}" for port in host_ports]
    forwarder = subprocess.Popen(forwarder_argv(list(zip(sockets, targets))), cwd=REPO, env={"PYTHONPATH": str(REPO)})
    try:
        end = time.monotonic() + 20
        while not all(s.exists() for s in sockets):
            assert forwarder.poll() is None and time.monotonic() < end, "the forwarder did not start"
            time.sleep(0.02)
        assert [_get(s) for s in sockets] == [f"{port}:/v1/models" for port in host_ports]
    finally:
        forwarder.terminate()
        forwarder.wait(10)
    assert not any(s.exists() for s in sockets), "the sockets outlived the forwarder"


def test_the_proxys_upstream_names_each_replica_in_order() -> None:
    proxy = ContainerRun(name="proxy", argv=["openforge", "proxy", "--upstream", "http://127.0.0.1:9001,127.0.0.1:9002"], env={}, cwd=Path("/"))
    assert channel_targets([proxy]) == ["127.0.0.1:9001", "127.0.0.1:9002"]
    assert channel_env(2) == "/run/openforge/engine.sock,/run/openforge/engine-1.sock"
    assert channel_targets([proxy], container="other") == []
    bad = ContainerRun(name="proxy", argv=["openforge", "proxy", "--upstream", "http://a:1,https://b:2"], env={}, cwd=Path("/"))
    with pytest.raises(ServiceError, match="not an http:// address to forward"):
        channel_targets([bad])
