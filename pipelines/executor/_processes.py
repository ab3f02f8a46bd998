"""The ``process`` runtime: a pod's containers as sibling processes on this machine.

Sidecars start before the main container and are stopped after it exits, as Argo does;
every process runs in its own process group (so stopping it stops what it started) and
is registered, so a failure or Ctrl-C anywhere stops them all.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from components.core.services import Service, ServiceError, wait_healthy
from pipelines.executor._sandbox import ContainerRun, PodPlan
from pipelines.executor._warm import WarmStarts

_POLL_S = 0.1


class ProcessRegistry:
    """Every live process the executor started."""

    def __init__(self, stop_timeout_s: float, warm: WarmStarts | None = None) -> None:
        self._lock = threading.Lock()
        self._services: dict[int, Service] = {}
        self._closed = False
        self.stop_timeout_s = stop_timeout_s
        self._warm = warm

    def start(self, run: ContainerRun, log_path: Path) -> Service:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # Under the lock: a process started after `stop_all` began would outlive the run.
        with self._lock:
            if self._closed:
                raise ServiceError(f"container {run.name!r} not started: the run is stopping")
            if self._warm is not None and self._warm.accepts(run.argv):
                try:
                    process = self._warm.spawn(run.argv, run.cwd, {**os.environ, **run.env}, log_path)
                except OSError:
                    pass  # the server is gone or stuck: start this one cold, as without it
                else:
                    service = Service(name=run.name, url="", process=process, log_path=log_path)
                    self._services[process.pid] = service
                    return service
            log = log_path.open("wb")
            try:
                process = subprocess.Popen(
                    run.argv,
                    cwd=run.cwd,
                    env={**os.environ, **run.env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                log.close()
                raise ServiceError(f"container {run.name!r}: cannot start {run.argv[0]!r}: {exc}") from None
            service = Service(name=run.name, url="", process=process, log_path=log_path, _log=log)
            self._services[process.pid] = service
        return service

    def stop(self, service: Service) -> None:
        service.stop(self.stop_timeout_s)
        with self._lock:
            self._services.pop(service.process.pid, None)

    def stop_all(self) -> None:
        """Stop every live process and refuse new ones (the run is over)."""
        with self._lock:
            self._closed = True
            services = list(self._services.values())
        for service in services:
            self.stop(service)


@dataclass
class RunningPod:
    """A started pod: its sidecars and its main container."""

    plan: PodPlan
    main: Service
    sidecars: list[Service]
    registry: ProcessRegistry
    helpers: list[Service] = field(default_factory=list)  # what holds the pod together (the sandbox's namespace, channel)
    on_stop: list[Callable[[], None]] = field(default_factory=list)

    def wait(self, deadline_s: float | None, cancel: threading.Event) -> int | None:
        """The main container's exit code; None when the deadline or a cancel stopped it."""
        end = time.monotonic() + deadline_s if deadline_s else None
        while True:
            try:
                return self.main.process.wait(_POLL_S)
            except subprocess.TimeoutExpired:
                if cancel.is_set() or (end is not None and time.monotonic() > end):
                    self.registry.stop(self.main)
                    return None

    def wait_ready(self, url: str, deadline_s: float) -> None:
        """Block until ``url`` answers 200 (the readiness probe); raise if the pod exits first."""
        try:
            wait_healthy(url, deadline_s, self.main.process)
        except ServiceError as exc:
            raise ServiceError(f"{exc}\n--- {self.main.log_path} ---\n{self.main.log_tail()}") from None

    def stop(self) -> None:
        """Stop the sidecars, then the main container (if still running)."""
        for service in self.sidecars:
            self.registry.stop(service)
        self.registry.stop(self.main)
        for service in reversed(self.helpers):
            self.registry.stop(service)
        for cleanup in self.on_stop:
            cleanup()

    def stop_sidecars(self) -> None:
        for service in self.sidecars:
            self.registry.stop(service)


def start_pod(plan: PodPlan, log_dir: Path, registry: ProcessRegistry) -> RunningPod:
    """Start the sidecars, then the main container, each logging to ``log_dir/<name>.log``."""
    sidecars: list[Service] = []
    try:
        for run in plan.sidecars:
            sidecars.append(registry.start(run, log_dir / f"{run.name}.log"))
        main = registry.start(plan.main, log_dir / "main.log")
    except BaseException:
        for service in sidecars:
            registry.stop(service)
        raise
    return RunningPod(plan=plan, main=main, sidecars=sidecars, registry=registry)
