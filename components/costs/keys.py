"""Where a step run's cost record lives: ``<RunLayout.costs(k)>/<step>[-<part>].json``.

The part is the rollout id for the per-rollout pods, so a retried or repeated step
overwrites its own record instead of adding one. Apart from the record's model: the
rollout step's spec names this key, and ``openforge --help`` imports the specs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.core.storage import RunLayout


def cost_record_key(layout: RunLayout, iteration: int | str, step: str, part: str | None = None) -> str:
    """The record's key (``iteration`` and ``part`` may be Argo expressions in a manifest)."""
    name = f"{step}-{part}" if part else step
    return f"{layout.costs(iteration)}/{name}.json"
