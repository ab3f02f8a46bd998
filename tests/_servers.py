"""Start the dev engine in a subprocess for tests, on a free loopback port.

Process handling (start, health wait with a deadline, stop without orphans) lives in
``components.core.services``; this module only knows the engine's command line.
"""

from __future__ import annotations

import random
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from components.core.services import Service, start_on_free_port

REPO = Path(__file__).resolve().parents[1]
TINY_MODEL_NAME = "tiny"


@dataclass
class EngineServer:
    """A running dev engine: ``url`` is the server root, ``model`` the name to request."""

    service: Service
    model: str

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as ``base_url``."""
        return self.url + "/v1"

    def stop(self) -> None:
        self.service.stop()


def dev_engine_argv(
    model_dir: Path, port: int, *, script: Path | None = None, served_model_name: str, args: tuple[str, ...] = ()
) -> list[str]:
    argv = [
        sys.executable, "-m", "components.engine", "serve",
        "--model", str(model_dir),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--served-model-name", served_model_name,
        "--threads", "1",  # test machines are small and shared
    ]  # fmt: skip
    if script is not None:
        argv += ["--script", str(script)]
    return argv + list(args)


def start_dev_engine(
    model_dir: Path,
    log_dir: Path,
    *,
    script: Path | None = None,
    served_model_name: str = TINY_MODEL_NAME,
    name: str = "dev-engine",
    deadline_s: float = 120.0,
    args: tuple[str, ...] = (),
) -> EngineServer:
    """Start ``python -m components.engine serve`` and return once /health answers."""
    service = start_on_free_port(
        name,
        lambda port: dev_engine_argv(model_dir, port, script=script, served_model_name=served_model_name, args=args),
        log_dir=log_dir,
        deadline_s=deadline_s,
        env={"PYTHONPATH": str(REPO)},
    )
    return EngineServer(service=service, model=served_model_name)


def start_proxy_process(upstream: str, out: Path, log_dir: Path, *args: str) -> Service:
    """Start ``python -m components.proxy`` (its own process group, so a test can SIGKILL it)."""

    def argv(port: int) -> list[str]:
        return [sys.executable, "-m", "components.proxy", "--upstream", upstream, "--out", str(out), "--port", str(port), *args]

    return start_on_free_port("proxy", argv, log_dir=log_dir, env={"PYTHONPATH": str(REPO)}, deadline_s=30)


def unshared_port() -> int:
    """A free loopback port below the kernel's ephemeral range, which no ``free_port()`` (bind to
    port 0) of a parallel test can be handed: for a server stopped and started again on the
    same port, or an address meant to stay dead. One in the ephemeral range could be taken
    and answered by another test's server in between."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
