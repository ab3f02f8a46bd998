"""Start the dev engine in a subprocess for tests, on a free loopback port.

Process handling (start, health wait with a deadline, stop without orphans) lives in
``components.core.services``; this module only knows the engine's command line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from components.core.services import Service, free_port, start_service

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
    port = free_port()
    service = start_service(
        name,
        dev_engine_argv(model_dir, port, script=script, served_model_name=served_model_name, args=args),
        port=port,
        log_dir=log_dir,
        deadline_s=deadline_s,
        env={"PYTHONPATH": str(REPO)},
    )
    return EngineServer(service=service, model=served_model_name)


def start_proxy_process(upstream: str, out: Path, log_dir: Path, *args: str) -> Service:
    """Start ``python -m components.proxy`` (its own process group, so a test can SIGKILL it)."""
    port = free_port()
    argv = [sys.executable, "-m", "components.proxy", "--upstream", upstream, "--out", str(out), "--port", str(port)]
    return start_service("proxy", argv + list(args), port=port, log_dir=log_dir, env={"PYTHONPATH": str(REPO)}, deadline_s=30)
