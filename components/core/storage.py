"""The artifact store: one run's files under one root, ``file://`` or ``s3://``.

Keys are deterministic (``RunLayout``), so a retried or repeated step overwrites the
very objects it wrote before instead of adding new ones; a commit marker written last
is what makes a checkpoint or an iteration count as done.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

from components.core.rollout_identity import outcome_key_file, trajectory_file

if TYPE_CHECKING:  # for the annotation only
    from components.core.config import ExperimentConfig


class StorageError(RuntimeError):
    """A store operation that failed; the message names the key and the store."""


class ArtifactStore(Protocol):
    root: str

    def put_bytes(self, key: str, data: bytes) -> None: ...
    def get_bytes(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str) -> list[str]: ...
    def children(self, folder: str) -> list[str]: ...
    def sizes(self, prefix: str) -> dict[str, int]: ...


def _check_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise StorageError(f"invalid object key {key!r}: use relative keys without '.', '..' or empty parts")
    return key


class LocalStore:
    """A folder on disk; writes go through a temp file and a rename, so readers never see half a file."""

    def __init__(self, root: Path) -> None:
        self.root_path = root.resolve()
        self.root = f"file://{self.root_path}"

    def _path(self, key: str) -> Path:
        return self.root_path / _check_key(key)

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise StorageError(f"{self.root}/{key} does not exist") from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> list[str]:
        base = self.root_path / prefix if prefix else self.root_path
        if not base.exists():
            return []
        return sorted(
            str(p.relative_to(self.root_path))
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    def children(self, folder: str) -> list[str]:
        """The names one level under ``folder`` ("" for the root), files and folders alike:
        one directory read, however many keys lie deeper."""
        base = self.root_path / folder.strip("/") if folder.strip("/") else self.root_path
        if not base.is_dir():
            return []
        return sorted(entry.name for entry in base.iterdir() if not entry.name.startswith("."))

    def sizes(self, prefix: str) -> dict[str, int]:
        """Bytes of each object under ``prefix`` (what the cost report bills as storage)."""
        return {key: self._path(key).stat().st_size for key in self.list(prefix)}


class S3Store:
    """An S3 bucket prefix through boto3 (AWS, MinIO, moto: any endpoint)."""

    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None = None) -> None:
        import boto3
        from botocore.config import Config

        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.root = f"s3://{bucket}/{self.prefix}".rstrip("/")
        # Standard retry mode backs off on throttling and dropped connections.
        self._s3 = boto3.client(
            "s3", endpoint_url=endpoint_url, config=Config(retries={"max_attempts": 8, "mode": "standard"})
        )

    def _key(self, key: str) -> str:
        _check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_bytes(self, key: str, data: bytes) -> None:
        try:
            self._s3.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)
        except Exception as exc:  # botocore raises many unrelated types
            raise StorageError(f"writing {self.root}/{key} failed: {exc}") from exc

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            raise StorageError(f"{self.root}/{key} does not exist") from None
        except Exception as exc:
            raise StorageError(f"reading {self.root}/{key} failed: {exc}") from exc

    def exists(self, key: str) -> bool:
        try:
            self._s3.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except Exception as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise StorageError(f"checking {self.root}/{key} failed: {exc}") from exc

    def list(self, prefix: str) -> list[str]:
        # A trailing slash is allowed: it lists a folder, not every key sharing the prefix.
        folder = "/" if prefix.endswith("/") else ""
        full = self._key(prefix.rstrip("/")) + folder if prefix else self.prefix
        strip = len(self.prefix) + 1 if self.prefix else 0
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
            keys.extend(obj["Key"][strip:] for obj in page.get("Contents", []))
        return sorted(keys)

    def children(self, folder: str) -> list[str]:
        """The names one level under ``folder`` ("" for the root), files and folders alike: a
        delimited listing, one request per thousand names, however many keys lie deeper."""
        full = self._key(folder.strip("/")) + "/" if folder.strip("/") else (f"{self.prefix}/" if self.prefix else "")
        names: set[str] = set()
        pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full, Delimiter="/")
        for page in pages:
            names.update(p["Prefix"][len(full) :].rstrip("/") for p in page.get("CommonPrefixes", []))
            names.update(obj["Key"][len(full) :] for obj in page.get("Contents", []))
        return sorted(names)

    def sizes(self, prefix: str) -> dict[str, int]:
        """Bytes of each object under ``prefix``, from the listing itself (no object is read)."""
        full = self._key(prefix.rstrip("/")) + "/" if prefix else self.prefix
        strip = len(self.prefix) + 1 if self.prefix else 0
        found: dict[str, int] = {}
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full):
            found.update((obj["Key"][strip:], obj["Size"]) for obj in page.get("Contents", []))
        return found


def open_store(uri: str, endpoint_url: str | None = None) -> ArtifactStore:
    """The store for ``file://PATH`` (relative paths from the CWD) or ``s3://BUCKET/PREFIX``."""
    if uri.startswith("file://"):
        return LocalStore(Path(uri.removeprefix("file://")))
    parsed = urlparse(uri)
    if parsed.scheme == "s3" and parsed.netloc:
        return S3Store(parsed.netloc, parsed.path, endpoint_url)
    raise StorageError(f"unsupported storage URI {uri!r}: use file://PATH or s3://BUCKET/PREFIX")


def put_dir(store: ArtifactStore, prefix: str, local: Path) -> list[str]:
    """Upload every file below ``local`` under ``prefix``; returns the keys written."""
    keys = []
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        key = f"{prefix}/{path.relative_to(local).as_posix()}"
        store.put_bytes(key, path.read_bytes())
        keys.append(key)
    return keys


def get_dir(store: ArtifactStore, prefix: str, local: Path) -> list[Path]:
    """Download every object under ``prefix/`` into ``local`` (replacing what is there)."""
    if local.exists():
        shutil.rmtree(local)
    paths = []
    base = prefix.rstrip("/")
    # The trailing slash keeps `tasks/a` from also matching `tasks/ab/...` on S3.
    for key in store.list(base + "/"):
        path = local / key[len(base) + 1 :]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(store.get_bytes(key))
        paths.append(path)
    return paths


class RunLayout:
    """Where each artifact of a run lives, relative to ``<storage.uri>/<experiment name>``.

    An evaluation (``evaluation`` = its id) keeps its tasks, plan, outcomes, trajectories,
    rewards and summary under ``<name>/evals/<id>/``, beside the run's own; the run's
    state and checkpoints stay where training keeps them.
    """

    def __init__(self, name: str, evaluation: str | None = None) -> None:
        self.name = name
        self.evaluation = evaluation
        self._scope = f"{name}/evals/{evaluation}" if evaluation else name

    def _it(self, iteration: int | str) -> str:
        # Not zero-padded: the Argo manifest builds these keys from the
        # `{{workflow.parameters.iteration}}` placeholder (passed as `iteration`), which cannot pad.
        return f"{self._scope}/iterations/{iteration}"

    def state(self) -> str:
        return f"{self.name}/state.json"

    def task(self, task_id: str) -> str:
        """Prefix of the run's frozen copy of one task folder (written by prepare, read by rollouts)."""
        return f"{self._scope}/tasks/{task_id}"

    def evaluated_checkpoint(self) -> str:
        """An evaluation's record of the policy it served (written by its serve step)."""
        return f"{self._scope}/checkpoint.json"

    def eval_summary(self) -> str:
        """An evaluation's results (written by its report step)."""
        return f"{self._scope}/summary.json"

    def probe_report(self) -> str:
        """A learnability probe's verdict on an evaluation (written by `openforge probe`, docs/operations.md)."""
        return f"{self._scope}/probe.json"

    def plan(self, iteration: int) -> str:
        return f"{self._it(iteration)}/plan.json"

    def straggler_cut(self, iteration: int) -> str:
        """When and why the iteration stopped waiting for its slowest rollouts (written by serve)."""
        return f"{self._it(iteration)}/straggler_cut.json"

    def choices(self, iteration: int) -> str:
        """The iteration's choice book (components/core/choices.py): written by prepare, read by serve."""
        return f"{self._it(iteration)}/choices.json"

    def trajectory(self, iteration: int | str, rollout_id: str) -> str:
        return f"{self._it(iteration)}/trajectories/{trajectory_file(rollout_id)}"

    def images(self, iteration: int | str) -> str:
        """Prefix of the iteration's images, one object per distinct image (``<sha256>.<ext>``).

        Beside the trajectories, as the proxy keeps them beside its session files: a
        record's image ``file`` (``images/<sha256>.<ext>``) is relative to its session's
        folder, so it resolves in the store as it did in the pod. Every rollout's pod
        uploads its images here; the same image from two rollouts is the same object.
        """
        return f"{self._it(iteration)}/trajectories/images"

    def outcomes(self, iteration: int | str) -> str:
        """Prefix of the iteration's outcomes, one object per rollout that ended."""
        return f"{self._it(iteration)}/outcomes/"

    def outcome(self, iteration: int | str, rollout_id: str) -> str:
        return f"{self.outcomes(iteration)}{outcome_key_file(rollout_id)}"

    def rewards(self, iteration: int) -> str:
        return f"{self._it(iteration)}/rewards.json"

    def batch(self, iteration: int) -> str:
        return f"{self._it(iteration)}/batch.pt"

    def metrics(self, iteration: int) -> str:
        return f"{self._it(iteration)}/metrics.json"

    def teacher_log_probs(self, iteration: int) -> str:
        """On-policy distillation: the teacher's log-prob of each sampled token of the batch (written by distill)."""
        return f"{self._it(iteration)}/teacher_log_probs.pt"

    def analytics(self, iteration: int) -> str:
        """The iteration's behaviour analytics, computed from its recordings (docs/analytics.md)."""
        return f"{self._it(iteration)}/analytics.json"

    def costs(self, iteration: int | str) -> str:
        """Prefix of the iteration's cost records, one object per step run (docs/operations.md, "What a run costs")."""
        return f"{self._it(iteration)}/costs"

    def checkpoint(self, version: int) -> str:
        return f"{self.name}/checkpoints/{version:05d}"

    def checkpoint_marker(self, version: int) -> str:
        return f"{self.checkpoint(version)}/COMMITTED"

    def sft_checkpoint(self) -> str:
        """`openforge sft`'s fine-tuned policy (a HuggingFace folder, COMMITTED marker last), for `model.path`."""
        return f"{self.name}/sft/checkpoint"

    def sft_marker(self) -> str:
        return f"{self.sft_checkpoint()}/COMMITTED"

    def sft_report(self) -> str:
        """What `openforge sft` learned from and which epoch it kept (components/trainer/sft.py)."""
        return f"{self.name}/sft/report.json"


def run_layout(config: ExperimentConfig) -> RunLayout:
    """The layout a step of this config writes to: the run's, or its evaluation's."""
    return RunLayout(config.name, config.evaluation.id if config.evaluation else None)
