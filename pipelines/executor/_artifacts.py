"""Input and output artifacts through the configured ArtifactStore.

An artifact's ``s3.key`` is read as a key of the experiment's store (relative to
``storage.uri``, the same keys ``RunLayout`` writes); bucket and endpoint come from the
store, not from the manifest. A key holding one object is a file, a key with objects
below it is a folder. Files travel unpacked (Argo's default tar.gz archiving is a
transport detail the store does not need).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.core.storage import ArtifactStore, get_dir, put_dir
from pipelines.executor._manifest import ManifestError
from pipelines.executor._sandbox import PathMap
from pipelines.executor._templating import unmark


class ArtifactError(RuntimeError):
    """An input artifact that is missing from the store."""


def _key(artifact: dict[str, Any], where: str) -> str:
    if artifact.get("from") is not None:
        raise ManifestError(f"{where}: artifact {artifact['name']!r} uses `from`; give it an s3.key instead")
    key = (artifact.get("s3") or {}).get("key")
    if not key:
        raise ManifestError(
            f"{where}: artifact {artifact['name']!r} needs an s3.key (the local executor needs deterministic keys)"
        )
    return unmark(key).strip("/")


def download_inputs(template: dict[str, Any], store: ArtifactStore, paths: PathMap, where: str) -> None:
    """Put every input artifact at its (mapped) path before the pod starts."""
    for artifact in (template.get("inputs") or {}).get("artifacts", []):
        local = paths.local(unmark(artifact["path"]))
        if artifact.get("raw") is not None:
            local.write_text(unmark(artifact["raw"]["data"]))
            continue
        key = _key(artifact, where)
        if store.exists(key):
            local.write_bytes(store.get_bytes(key))
        elif not get_dir(store, key, local) and not artifact.get("optional"):
            raise ArtifactError(f"{where}: input artifact {artifact['name']!r}: nothing at {store.root}/{key}")


def upload_outputs(
    template: dict[str, Any], store: ArtifactStore, paths: PathMap, where: str
) -> tuple[dict[str, Path], list[str]]:
    """Upload the output artifacts that exist; return them by name and the missing required ones."""
    uploaded: dict[str, Path] = {}
    missing: list[str] = []
    artifacts = (template.get("outputs") or {}).get("artifacts", [])
    # Required artifacts go last: their presence is what `outputs_exist` (resume) trusts,
    # so it must imply that the optional ones made it too.
    for artifact in sorted(artifacts, key=lambda a: not a.get("optional")):
        local = paths.local(unmark(artifact["path"]))
        key = _key(artifact, where)
        if local.is_file():
            store.put_bytes(key, local.read_bytes())
        elif local.is_dir():
            put_dir(store, key, local)
        else:
            if not artifact.get("optional"):
                missing.append(f"{artifact['name']} ({artifact['path']})")
            continue
        uploaded[artifact["name"]] = local
    return uploaded, missing


def outputs_exist(template: dict[str, Any], store: ArtifactStore, where: str) -> bool:
    """True when the template declares required output artifacts and all are in the store."""
    required = [a for a in (template.get("outputs") or {}).get("artifacts", []) if not a.get("optional")]
    if not required:
        return False
    for artifact in required:
        key = _key(artifact, where)
        if not (store.exists(key) or store.list(key + "/")):
            return False
    return True
