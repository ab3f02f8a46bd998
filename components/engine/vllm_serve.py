"""The serve step with vLLM (GPU, or its CPU build): this iteration's checkpoint, gated, until stopped.

The checkpoint is staged in a folder named by its policy version (that name is what
vLLM reports as the model's ``root``, see ``vllm_launch``); a LoRA checkpoint is split
into the base weights and the adapter. vLLM runs as a child process; the step waits for
``/health`` and for ``/v1/models`` to name the expected version, then stays until
SIGTERM (Argo stopping the daemon), which it passes on to vLLM.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
from pathlib import Path

from components.core.checkpoints import LORA_ADAPTER_DIR
from components.core.config import ExperimentConfig
from components.engine import cut_route
from components.engine.readiness import EngineNotReady, wait_until_serving
from components.engine.server import policy_version_of
from components.engine.vllm_launch import BASE_DIR, EngineLaunch, StagedPolicy, vllm_serve_command

_STOP_GRACE_S = 30.0


def stage_policy(checkpoint: Path, root: Path) -> StagedPolicy:
    """Links under ``root`` for vLLM: ``<version>`` -> the checkpoint (full), or ``base`` -> the
    checkpoint and ``<version>`` -> its adapter (LoRA). Links, not copies: weights are large."""
    version = policy_version_of(checkpoint)
    root.mkdir(parents=True, exist_ok=True)
    adapter = checkpoint / LORA_ADAPTER_DIR
    if not adapter.is_dir():
        (root / version).symlink_to(checkpoint.resolve(), target_is_directory=True)
        return StagedPolicy(root=root, version=version, model=version)
    # vLLM reads the top-level weights only: the adapter folder inside "base" is not loaded twice.
    (root / BASE_DIR).symlink_to(checkpoint.resolve(), target_is_directory=True)
    (root / version).symlink_to(adapter.resolve(), target_is_directory=True)
    return StagedPolicy(root=root, version=version, model=BASE_DIR, adapter=version)


def run_engine(launch: EngineLaunch, probe_url: str, version: str, timeout_s: float, restarts: int = 0) -> int:
    """Start the engine, gate on health and version, then wait; SIGTERM/SIGINT stop it cleanly.

    An engine that exits without being told to (a crash) is started again, up to
    ``restarts`` times, on the same address: the daemon stays up, so the iteration goes on,
    and the rollouts' proxies reach the engine again once it is back (their calls meanwhile
    fail over to another replica or are retried). Returns the exit code of the last start.
    """
    running: list[subprocess.Popen] = []
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if running:
            running[-1].send_signal(signum)  # forwarded as received

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        restarted = 0
        while True:
            running[:] = [_start(launch)]
            process = running[0]
            try:
                model = wait_until_serving(probe_url, version, timeout_s, exited=process.poll)
            except EngineNotReady:
                if stopping:  # told to stop while starting (again): a stop, not a failed start
                    return process.wait()
                raise
            print(f"openforge: vLLM serves policy version {version} as {model!r}", flush=True)
            code = process.wait()
            if stopping or restarted == restarts:
                return code
            restarted += 1
            print(
                f"openforge: vLLM exited with code {code} while serving, without being stopped; "
                f"starting it again ({restarted} of engine.restarts {restarts})",
                flush=True,
            )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for process in running:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=_STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    process.kill()


def _start(launch: EngineLaunch) -> subprocess.Popen:
    try:
        return subprocess.Popen(launch.argv, cwd=launch.cwd, env={**os.environ, **launch.env})
    except FileNotFoundError:
        raise EngineNotReady(
            f"engine.vllm.python {launch.argv[0]!r} does not exist here: engine.kind 'vllm' runs in the engine "
            "image, which has vLLM; on a machine without a GPU run `make vllm` and set engine.vllm.python to "
            ".venv-vllm/bin/python"
        ) from None


def serve_vllm(
    config: ExperimentConfig, checkpoint: Path, work: Path, *, host: str, port: int, cut_file: Path | None = None
) -> int:
    """Serve ``checkpoint`` with vLLM on ``host:port`` until told to stop; returns vLLM's exit code.

    ``cut_file``: the straggler cut's state, served at ``CUT_ROUTE`` by a middleware vLLM
    imports from its working directory (cut_route.py is copied there: vLLM's interpreter
    does not have OpenForge).
    """
    staged = stage_policy(checkpoint, work / "served")
    launch = vllm_serve_command(config, staged, host=host, port=port)
    if cut_file is not None:
        shutil.copyfile(cut_route.__file__, staged.root / f"{cut_route.VLLM_MODULE}.py")
        launch = dataclasses.replace(
            launch,
            argv=[*launch.argv, "--middleware", cut_route.VLLM_MIDDLEWARE],
            env={**launch.env, cut_route.CUT_FILE_ENV: str(cut_file)},
        )
    probe_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return run_engine(
        launch, f"http://{probe_host}:{port}", staged.version, config.engine.startup_timeout_s, config.engine.restarts
    )
