"""What the overhead benchmark times a run with, all from outside the pipeline's code.

- ``EventLog``: the executor's node events (phase changes), stamped with wall-clock time
  as ``run_experiment``'s view receives them, per iteration.
- ``ProcessWatch``: the lifetimes of the harness and verifier processes, from /proc.
- ``model_call_spans``: each recorded model call's span, from the proxy's records
  (``started_at`` and ``latency_ms``) in the store.
- ``update_seconds``: the trainer's update (forward, backward, optimizer) re-run in this
  process on the very batch and checkpoint an iteration used, without its imports.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from benchmarks.overhead.intervals import Interval
from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall


@dataclass(frozen=True)
class TimedEvent:
    at: float  # time.time() when the view received it
    task: str
    node: str
    phase: str


@dataclass
class IterationEvents:
    started: float  # time.time() when run_experiment began the iteration
    events: list[TimedEvent] = field(default_factory=list)


class EventLog:
    """Every node event of a run, by iteration, with the time it arrived."""

    def __init__(self) -> None:
        self.iterations: dict[int, IterationEvents] = {}
        self._lock = threading.Lock()
        self._current: IterationEvents | None = None

    @contextlib.contextmanager
    def attached(self) -> Iterator["EventLog"]:
        """Let ``pipelines.run.run_experiment`` report to this log as well as to its own view.

        run_experiment builds its view itself and takes no observer, so the view's class is
        swapped for one that also records; nothing else about the run changes.
        """
        import pipelines.run as run_module

        log, original = self, run_module.RunView

        class RecordingView(original):  # type: ignore[misc, valid-type]
            def start_iteration(self, iteration: int) -> None:
                with log._lock:
                    log._current = log.iterations[iteration] = IterationEvents(started=time.time())
                super().start_iteration(iteration)

            def observe(self, event) -> None:  # noqa: ANN001 - the executor's NodeEvent
                stamped = TimedEvent(time.time(), event.task, event.node, event.phase.value)
                with log._lock:
                    if log._current is not None:
                        log._current.events.append(stamped)
                super().observe(event)

        run_module.RunView = RecordingView
        try:
            yield self
        finally:
            run_module.RunView = original


# A process is one of ours when its command line holds the marker and this process is its ancestor.
WATCHED = {"harness": "reference_harness.py", "verifier": "/verify.py"}
_YOUNG_S = 0.5  # re-read a young process's command line: it may not have exec'd yet


class ProcessWatch:
    """Samples /proc in a thread: the lifetime of every harness and verifier process we started.

    A start is the kernel's creation time; an end is the midpoint between the last sample
    that saw the process and the first that did not, so ends are within ``interval_s / 2``.
    """

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.lifetimes: dict[str, list[Interval]] = {kind: [] for kind in WATCHED}
        self._me = os.getpid()
        self._alive: dict[int, tuple[str, float, float]] = {}  # pid -> (kind, start, last seen)
        self._ignored: dict[int, float] = {}  # pid -> creation time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="process-watch", daemon=True)

    def __enter__(self) -> "ProcessWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        now = time.time()
        for kind, start, _ in self._alive.values():
            self.lifetimes[kind].append((start, now))
        self._alive.clear()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample(time.time())

    def _sample(self, now: float) -> None:
        pids = set(psutil.pids())
        for pid in list(self._alive):
            kind, start, last = self._alive[pid]
            if pid in pids:
                self._alive[pid] = (kind, start, now)
            else:
                self.lifetimes[kind].append((start, (last + now) / 2))
                del self._alive[pid]
        # Forget vanished pids, so a reused pid is looked at afresh.
        self._ignored = {pid: t for pid, t in self._ignored.items() if pid in pids}
        for pid in pids:
            if pid in self._alive or (pid in self._ignored and now - self._ignored[pid] > _YOUNG_S):
                continue
            self._inspect(pid, now)

    def _inspect(self, pid: int, now: float) -> None:
        try:
            process = psutil.Process(pid)
            created = process.create_time()
            command = " ".join(process.cmdline())
            kind = next((k for k, marker in WATCHED.items() if marker in command), None)
            # A child of a watched process (a forked tool command) is part of its parent's lifetime.
            inside = process.ppid() in self._alive
            if kind is not None and not inside and any(p.pid == self._me for p in process.parents()):
                self._alive[pid] = (kind, created, now)
                self._ignored.pop(pid, None)
                return
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            created = now
        self._ignored[pid] = created


def model_call_spans(store: ArtifactStore, name: str, iteration: int) -> list[Interval]:
    """(start, end) in unix seconds of every model call the proxy recorded in ``iteration``."""
    prefix = RunLayout(name).trajectory(iteration, "x").rsplit("/", 1)[0] + "/"
    spans = []
    for key in store.list(prefix):
        for line in store.get_bytes(key).splitlines():
            if line.strip():
                call = RecordedCall.model_validate_json(line)
                spans.append((call.started_at, call.started_at + call.latency_ms / 1000))
    return spans


def update_seconds(store: ArtifactStore, config: ExperimentConfig, iteration: int) -> float:
    """Seconds the trainer's update of ``iteration`` takes, re-run here on its stored batch.

    The update is deterministic for a seed, checkpoint and batch, so this is the very
    computation the train step made; veRL, torch and the model are loaded before the clock
    starts, so only forward, backward and the optimizer step are timed.
    """
    import torch
    import verl.trainer.ppo.core_algos  # noqa: F401 - imported here so the clock sees none of it
    import verl.workers.config  # noqa: F401
    from transformers import AutoModelForCausalLM

    from components.core.checkpoints import fetch_committed
    from components.trainer.batch import read_stored_batch
    from components.trainer.cpu_update import cpu_update

    layout = RunLayout(config.name)
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        work = Path(tmp)
        if fetch_committed(store, layout, iteration, work / "base") is None:
            raise FileNotFoundError(f"no committed checkpoint <= {iteration} in {store.root}")
        data = read_stored_batch(store, layout, iteration, work)
        if len(data) == 0:
            return 0.0
        model = AutoModelForCausalLM.from_pretrained(work / "base", dtype=torch.float32)
        started = time.perf_counter()
        cpu_update(model, data, config.algorithm, seed=config.seed)
        return time.perf_counter() - started
