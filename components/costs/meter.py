"""Measure one step run: wall time, CPU of the process and its children, from start to finish.

Only the standard library at import: the step command imports this before every step.
CPU comes from ``getrusage``: the step's own process plus the children it waited for
(the rollout's harness and verifier, the serve step's vLLM). A child still running, or
one its parent never waited for, is not counted.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.costs.record import CostRecord


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class CostMeter:
    started_at: float
    _clock: float
    _cpu_self: float
    _cpu_children: float

    @classmethod
    def start(cls) -> CostMeter:
        return cls(time.time(), time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN))

    def finish(self, step: str, iteration: int, part: str | None, gpus: int, exit_code: int) -> CostRecord:
        """The record of the run from ``start`` until now."""
        from components.costs.record import CostRecord

        return CostRecord(
            step=step,
            part=part,
            iteration=iteration,
            started_at=self.started_at,
            ended_at=time.time(),
            wall_s=time.monotonic() - self._clock,
            cpu_self_s=max(0.0, _cpu(resource.RUSAGE_SELF) - self._cpu_self),
            cpu_children_s=max(0.0, _cpu(resource.RUSAGE_CHILDREN) - self._cpu_children),
            gpus=gpus,
            exit_code=exit_code,
        )
