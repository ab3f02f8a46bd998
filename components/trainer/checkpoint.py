"""Checkpoints in the store: find the one to train from, save the next, commit it last.

Layout: ``RunLayout.checkpoint(v)/`` holds the HuggingFace files plus
``openforge_checkpoint.json``; ``RunLayout.checkpoint_marker(v)`` is written after every
other file, so a reader that sees the marker sees a whole checkpoint.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from components.core.config import ExperimentConfig
from components.core.storage import ArtifactStore, RunLayout, get_dir, open_store, put_dir

CHECKPOINT_INFO = "openforge_checkpoint.json"
_MARKER = "COMMITTED"
# Files save_pretrained rewrites, or that belong to one version only; everything else
# (tokenizer, chat template) is carried over byte for byte so every version tokenises alike.
_NOT_INHERITED = re.compile(r"(\.safetensors|\.bin|\.index\.json|^config\.json|^generation_config\.json)$")


def committed_versions(store: ArtifactStore, layout: RunLayout) -> list[int]:
    """Versions whose commit marker exists, ascending."""
    prefix = f"{layout.name}/checkpoints/"
    found = re.compile(re.escape(prefix) + r"(\d+)/" + _MARKER + "$")
    return sorted(int(m.group(1)) for key in store.list(prefix) if (m := found.match(key)))


def _initial_model(config: ExperimentConfig, dest: Path) -> None:
    path = config.model.path
    if path is None:
        # Deterministic: the engine builds byte-identical weights from the same seed.
        from components.engine.tiny_model import init_tiny_model

        init_tiny_model(dest, seed=config.model.tiny_seed)
    elif path.startswith("s3://"):
        parsed = urlparse(path)
        get_dir(open_store(f"s3://{parsed.netloc}", config.storage.endpoint_url), parsed.path.strip("/"), dest)
    else:
        if not Path(path).is_dir():
            raise FileNotFoundError(f"model.path {path!r} is not a directory; point it at a HuggingFace model folder")
        shutil.copytree(path, dest)


def fetch_checkpoint(config: ExperimentConfig, store: ArtifactStore, iteration: int, dest: Path) -> int:
    """Put the newest committed checkpoint <= ``iteration`` (what that iteration served) in ``dest``."""
    layout = RunLayout(config.name)
    versions = [v for v in committed_versions(store, layout) if v <= iteration]
    if not versions:
        _initial_model(config, dest)
        return 0
    get_dir(store, layout.checkpoint(versions[-1]), dest)
    (dest / _MARKER).unlink(missing_ok=True)
    return versions[-1]


def save_checkpoint(model: Any, parent: Path, out: Path, info: dict[str, Any]) -> Path:
    """Write ``model`` as a HuggingFace folder, inheriting the parent's tokenizer files."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(parent.iterdir()):
        if path.is_file() and path.name not in (CHECKPOINT_INFO, _MARKER) and not _NOT_INHERITED.search(path.name):
            shutil.copy2(path, out / path.name)
    model.save_pretrained(out, safe_serialization=True)
    (out / CHECKPOINT_INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return out


def commit_checkpoint(store: ArtifactStore, layout: RunLayout, version: int, local: Path) -> None:
    """Upload the folder, then the marker: a crash in between leaves an uncommitted (ignored) version."""
    put_dir(store, layout.checkpoint(version), local)
    store.put_bytes(layout.checkpoint_marker(version), f"{version}\n".encode())
