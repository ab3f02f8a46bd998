"""An iteration's flat metrics file (``RunLayout.metrics(k)``), shared by the steps that fill it.

Score and train each own their keys and merge them in, so either step can be rerun
without erasing the other's numbers; the commit step logs the merged file once.
"""

from __future__ import annotations

import json
import math

from components.core.storage import ArtifactStore


def read_metrics(store: ArtifactStore, key: str) -> dict[str, float]:
    """The metrics written so far ({} when none)."""
    return json.loads(store.get_bytes(key)) if store.exists(key) else {}


def merge_metrics(store: ArtifactStore, key: str, metrics: dict[str, float]) -> dict[str, float]:
    """Add or overwrite ``metrics`` in the file at ``key``; returns the merged whole."""
    bad = sorted(name for name, value in metrics.items() if not math.isfinite(value))
    if bad:
        # JSON has no NaN/inf, and a tracker would plot them as gaps or crash.
        raise ValueError(f"metrics {bad} are not finite numbers; leave a metric out when it has no value")
    merged = {**read_metrics(store, key), **{name: float(v) for name, v in metrics.items()}}
    store.put_bytes(key, (json.dumps(merged, indent=2, sort_keys=True) + "\n").encode())
    return merged
