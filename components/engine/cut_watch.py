"""The serve step's straggler cut: count an iteration's stored outcomes, declare the cut when it is due.

The serve step is the one process that lives through all of an iteration's rollouts and
can read the store, and every rollout already reaches it (through its proxy), so it
decides for all of them: once ``rollout.finish_fraction`` of the plan's rollouts have an
outcome in the store and ``rollout.grace_s`` has passed since, it writes the cut state
the engine serves at ``CUT_ROUTE`` (``cut_route.py``) and the store's record of it
(``RunLayout.straggler_cut``). Rollouts still running stop at their next poll and record
status ``cut``. One listing of the outcomes per poll, whatever the number of rollouts.
docs/reliability.md, "The straggler cut".
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, run_layout

POLL_S = 2.0


@dataclass(frozen=True)
class CutRule:
    """When an iteration of ``total`` rollouts stops waiting: ``needed`` ended, then ``grace_s``."""

    total: int
    fraction: float
    grace_s: float

    @property
    def needed(self) -> int:
        return max(1, math.ceil(self.fraction * self.total - 1e-9))

    def due(self, reached_at: float | None, now: float) -> bool:
        return reached_at is not None and now >= reached_at + self.grace_s


class CutWatch:
    """A daemon thread that declares iteration ``iteration``'s cut; ``stop()`` ends it."""

    def __init__(
        self,
        config: ExperimentConfig,
        iteration: int,
        store: ArtifactStore,
        state_file: Path,
        say: Callable[[str], None] = print,
        poll_s: float = POLL_S,
    ) -> None:
        self.layout: RunLayout = run_layout(config)
        self.iteration, self.store, self.state_file, self.say, self.poll_s = iteration, store, state_file, say, poll_s
        self.fraction, self.grace_s = config.rollout.finish_fraction, config.rollout.grace_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="openforge-cut-watch", daemon=True)

    def start(self) -> "CutWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)

    def __enter__(self) -> "CutWatch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            self._watch()
        except Exception as exc:  # a store hiccup must not take the engine down: no cut, said loudly
            self.say(f"straggler cut: stopped watching ({exc!r}); iteration {self.iteration} waits for every rollout")

    def _watch(self) -> None:
        rule: CutRule | None = None
        reached_at: float | None = None
        ended = 0  # rollouts ended when the threshold was reached
        while not self._stopped.wait(0 if rule is None else self.poll_s):
            if rule is None:
                rule = self._rule()
                if rule is None:
                    continue
            # Once the threshold is reached only the grace is left to wait: no more listings.
            if reached_at is None and (ended := self._ended()) >= rule.needed:
                reached_at = time.time()
                self.say(
                    f"straggler cut: {ended} of {rule.total} rollouts ended (rollout.finish_fraction {rule.fraction:g}); "
                    f"the rest are cut in {rule.grace_s:g}s"
                )
            if rule.due(reached_at, time.time()):
                self._declare(rule, ended, reached_at)
                return

    def _rule(self) -> CutRule | None:
        key = self.layout.plan(self.iteration)
        if not self.store.exists(key):  # the serve step starts beside prepare's last writes
            return None
        total = len(json.loads(self.store.get_bytes(key))["rollouts"])
        return CutRule(total=total, fraction=self.fraction, grace_s=self.grace_s)

    def _ended(self) -> int:
        return len(self.store.list(self.layout.outcomes(self.iteration)))

    def _declare(self, rule: CutRule, ended: int, reached_at: float) -> None:
        record = {
            "cut": True,
            "iteration": self.iteration,
            "total": rule.total,
            "ended_at_threshold": ended,
            "finish_fraction": rule.fraction,
            "grace_s": rule.grace_s,
            "reached_at": reached_at,
            "cut_at": time.time(),
            "reason": (
                f"the straggler cut: {rule.needed} of {rule.total} rollouts had ended (rollout.finish_fraction "
                f"{rule.fraction:g}) and rollout.grace_s {rule.grace_s:g}s passed"
            ),
        }
        body = json.dumps(record, indent=2).encode()
        tmp = self.state_file.with_name(f".{self.state_file.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, self.state_file)
        self.store.put_bytes(self.layout.straggler_cut(self.iteration), body)
        self.say(f"straggler cut: iteration {self.iteration} cut; rollouts still running stop at their next poll")
