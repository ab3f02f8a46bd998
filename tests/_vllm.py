"""Real vLLM for tests: its CPU build (``make vllm`` -> ``.venv-vllm``), started with the
serve step's own command line (``components.engine.vllm_launch``) on a staged checkpoint
and admitted by the serve step's own gate (health, then ``/v1/models`` naming the version).

A start costs a minute or more on a small CPU, so tests share one server per session
(``vllm_engine`` in tests/conftest.py); ``make_vllm`` starts another for the rare test that
needs its own (another checkpoint, LoRA). Under ``make test`` the venv is built in the
background (Makefile: vllm-background) and the tests wait for it here; run by hand they use
``.venv-vllm`` when it is there and skip, naming ``make vllm``, when it is not.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._background_installs import background_install_problem
from tests._servers import REPO, EngineServer

from components.core.config import ExperimentConfig, load_config
from components.core.services import Service, free_port, start_service
from components.engine.readiness import wait_until_serving
from components.engine.vllm_launch import vllm_serve_command
from components.engine.vllm_serve import stage_policy

STATUS_ENV = "OPENFORGE_VLLM_STATUS"
PYTHON_ENV = "OPENFORGE_VLLM_PYTHON"
VENV = REPO / ".venv-vllm"
EXAMPLE = REPO / "examples" / "vllm.yaml"  # the CPU settings, one home
STARTUP_TIMEOUT_S = 900.0  # minutes on a busy 2-core machine: imports alone take one
_STOP_TIMEOUT_S = 30.0


def vllm_python() -> tuple[str | None, str]:
    """(the python that has vLLM's CPU build, "") or (None, why the tests that need it skip)."""
    problem = background_install_problem(STATUS_ENV, "vLLM install", "vllm")
    if problem:
        return None, problem
    python = os.environ.get(PYTHON_ENV)
    if python:
        path = Path(python).absolute()
        return (str(path), "") if path.exists() else (None, f"{PYTHON_ENV}={python} does not exist")
    if not (VENV / ".installed").exists():
        return None, f"vLLM's CPU build is not installed in {VENV}: run `make vllm`"
    return str(VENV / "bin" / "python"), ""


def vllm_test_config(python: str, *, lora_rank: int = 0, max_model_len: int = 32768, **sections: Any) -> ExperimentConfig:
    """A config whose serve step runs the CPU build with ``examples/vllm.yaml``'s settings (float32,
    eager, chunked prefill off: docs/engine.md), this machine's vLLM python and a smaller KV cache."""
    trainer = {"backend": "verl", "lora": {"rank": lora_rank}} if lora_rank else {}
    vllm = {**load_config(EXAMPLE).engine.vllm.model_dump(), "python": python, "kv_cache_gib": 0.5}
    return ExperimentConfig(
        name="vllm-test",
        tasks={"source": "t"},
        engine={"kind": "vllm", "max_model_len": max_model_len, "startup_timeout_s": STARTUP_TIMEOUT_S, "vllm": vllm},
        trainer=trainer,
        **sections,
    )


@dataclass
class VllmServer(EngineServer):
    """A running vLLM: ``model`` is the name the proxy would call, ``version`` the policy version it serves."""

    version: str
    startup_s: float

    def stop(self) -> None:
        self.service.stop(timeout=_STOP_TIMEOUT_S)


def start_vllm(checkpoint: Path, work: Path, config: ExperimentConfig, *, name: str = "vllm") -> VllmServer:
    """Stage ``checkpoint`` under ``work`` as the serve step does and serve it with ``config``'s vLLM."""
    staged = stage_policy(checkpoint, work / "served")
    port = free_port()
    launch = vllm_serve_command(config, staged, host="127.0.0.1", port=port)
    started = time.monotonic()
    service = start_service(
        name, launch.argv, port=port, log_dir=work, deadline_s=STARTUP_TIMEOUT_S, env=launch.env, cwd=launch.cwd
    )
    try:
        model = wait_until_serving(service.url, staged.version, timeout_s=60, exited=service.process.poll)
    except Exception:
        service.stop(timeout=_STOP_TIMEOUT_S)
        raise
    return VllmServer(service=service, model=model, version=staged.version, startup_s=time.monotonic() - started)
