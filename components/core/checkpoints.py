"""Checkpoints in the store: which versions are committed, fetch one, commit one.

Layout: ``RunLayout.checkpoint(v)/`` holds the HuggingFace files plus
``openforge_checkpoint.json`` (``policy_version`` is what the engine reports and the
proxy records); ``RunLayout.checkpoint_marker(v)`` is written after every other file,
so a reader that sees the marker sees a whole checkpoint. Version 0 is the initial
policy (committed by the serve step); iteration k serves version k and trains k+1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from components.core.storage import ArtifactStore, RunLayout, get_dir, put_dir

CHECKPOINT_INFO = "openforge_checkpoint.json"
# A LoRA checkpoint: base weights at the top, the adapter (PEFT layout) in this folder.
LORA_ADAPTER_DIR = "lora_adapter"
_MARKER = "COMMITTED"


def committed_versions(store: ArtifactStore, layout: RunLayout) -> list[int]:
    """Versions whose commit marker exists, ascending."""
    prefix = f"{layout.name}/checkpoints/"
    found = re.compile(re.escape(prefix) + r"(\d+)/" + _MARKER + "$")
    return sorted(int(m.group(1)) for key in store.list(prefix) if (m := found.match(key)))


def fetch_committed(store: ArtifactStore, layout: RunLayout, iteration: int, dest: Path) -> int | None:
    """Put the newest committed checkpoint <= ``iteration`` in ``dest``; None when there is none."""
    versions = [v for v in committed_versions(store, layout) if v <= iteration]
    if not versions:
        return None
    get_dir(store, layout.checkpoint(versions[-1]), dest)
    (dest / _MARKER).unlink(missing_ok=True)
    return versions[-1]


def write_checkpoint_info(directory: Path, info: dict[str, Any]) -> None:
    (directory / CHECKPOINT_INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def commit_checkpoint(store: ArtifactStore, layout: RunLayout, version: int, local: Path) -> None:
    """Upload the folder, then the marker: a crash in between leaves an uncommitted (ignored) version."""
    put_dir(store, layout.checkpoint(version), local)
    store.put_bytes(layout.checkpoint_marker(version), f"{version}\n".encode())
