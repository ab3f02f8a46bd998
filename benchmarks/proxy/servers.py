"""Start and stop the servers a proxy benchmark talks to, each on a free loopback port.

Every server runs in its own process group so stopping it also stops anything it
spawned; ``ServerProcess`` is a context manager and always stops its process.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LITELLM_VENV = REPO / ".venv-litellm"
LITELLM_VERSION = "1.110.2"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class ServerProcess:
    """One server process; ready once its port accepts connections."""

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path, env: dict[str, str] | None = None):
        self.name, self.argv, self.port, self.log_path = name, argv, port, log_path
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"{self.name} is not started"
        return self.proc.pid

    def __enter__(self) -> "ServerProcess":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(self.argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            self._wait_ready(timeout_s=120)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with code {self.proc.returncode} before it was ready; "
                                   f"its log ({self.log_path}) ends with:\n{self.log_tail()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not open port {self.port} within {timeout_s:.0f} s; "
                           f"its log ({self.log_path}) ends with:\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


def upstream(workdir: Path, prompt_tokens: int = 128, completion_tokens: int = 8) -> ServerProcess:
    port = free_port()
    argv = [sys.executable, "-m", "benchmarks.proxy.fast_upstream", "--port", str(port),
            "--prompt-tokens", str(prompt_tokens), "--completion-tokens", str(completion_tokens)]
    return ServerProcess("fast upstream", argv, port, workdir / "upstream.log")


def our_proxy(upstream_url: str, out_dir: Path, workdir: Path) -> ServerProcess:
    port = free_port()
    argv = [sys.executable, "-m", "pipelines.cli", "proxy", "--upstream", upstream_url, "--out", str(out_dir),
            "--host", HOST, "--port", str(port)]
    return ServerProcess("OpenForge proxy", argv, port, workdir / "proxy.log")


def our_proxy_available() -> str | None:
    """None when the proxy CLI can run here, else why not."""
    probe = subprocess.run([sys.executable, "-m", "pipelines.cli", "proxy", "--help"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        last = ((probe.stderr or probe.stdout).strip().splitlines() or ["no output"])[-1]
        return f"`python -m pipelines.cli proxy --help` failed ({last})"
    return None


def litellm_available() -> str | None:
    """None when the LiteLLM venv holds the pinned release, else why not (with the fix)."""
    exe = LITELLM_VENV / "bin" / "litellm"
    fix = ("create it: `python3 -m venv .venv-litellm && .venv-litellm/bin/pip install -r "
           "benchmarks/proxy/litellm-requirements.txt` (`make bench-proxy` does this)")
    if not exe.exists():
        return f"{exe} not found; {fix}"
    probe = subprocess.run([str(LITELLM_VENV / "bin" / "python"), "-c",
                            "import importlib.metadata as m; print(m.version('litellm'))"],
                           capture_output=True, text=True, timeout=60)
    if probe.stdout.strip() != LITELLM_VERSION:
        return f"{LITELLM_VENV} holds litellm {probe.stdout.strip() or '?'}, not {LITELLM_VERSION}; {fix}"
    return None


def _litellm_config(upstream_url: str) -> str:
    # Everything that could reach out or add per-call work is off: no database, no
    # callbacks, no spend or error logs, no telemetry. One worker, like our proxy.
    return f"""\
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: {upstream_url}/v1
      api_key: dummy
litellm_settings:
  telemetry: false
  set_verbose: false
  callbacks: []
  success_callback: []
  failure_callback: []
  request_timeout: 60
general_settings:
  disable_spend_logs: true
  disable_error_logs: true
  # No key check at all: the lightest auth path; the server listens on loopback only.
  dangerously_permit_weak_or_unset_master_key: true
"""


def litellm_proxy(upstream_url: str, workdir: Path) -> ServerProcess:
    port = free_port()
    config = workdir / "litellm.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(_litellm_config(upstream_url))
    # A dead proxy port for anything that would leave the machine: LiteLLM must make
    # no outside connection during the benchmark.
    dead = f"http://{HOST}:{free_port()}"
    env = {
        "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_DISABLE_LATEST_RELEASE_CHECK": "True",
        "LITELLM_LOG": "ERROR",
        "DISABLE_ADMIN_UI": "True",
        "NO_DOCS": "True",
        "NO_REDOC": "True",
    }
    argv = [str(LITELLM_VENV / "bin" / "litellm"), "--config", str(config), "--host", HOST, "--port", str(port),
            "--num_workers", "1"]
    return ServerProcess("LiteLLM proxy", argv, port, workdir / "litellm.log", env=env)
