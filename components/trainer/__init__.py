"""Training: recorded calls + rewards -> veRL DataProto -> CPU GRPO update -> checkpoint.

Exports load on first use, so importing the package (or ``openforge --help``) never
imports torch or veRL.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BatchError",
    "BatchStats",
    "TemperatureMismatchError",
    "build_batch",
    "build_batch_file",
    "cpu_update",
    "merge_calls",
    "train_iteration",
]

_HOMES = {
    "BatchError": "components.trainer.rows",
    "TemperatureMismatchError": "components.trainer.rows",
    "merge_calls": "components.trainer.rows",
    "BatchStats": "components.trainer.batch",
    "build_batch": "components.trainer.batch",
    "build_batch_file": "components.trainer.build",
    "cpu_update": "components.trainer.cpu_update",
    "train_iteration": "components.trainer.step",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'components.trainer' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
