"""What every suite loader shares: reading the native files, task ids, and writing the task folders.

A loader reads a whole benchmark file and checks every entry before it writes anything,
so a bad line leaves the output as it was; each error names the file, the entry (a line of
a JSONL file, an index of a JSON list, a task file), the field and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from components.core.validation import join_errors

_Model = TypeVar("_Model", bound=BaseModel)
_MAX_ID = 48  # components/rollout/tasks.py: TASK_ID_RULE


class SuiteError(ValueError):
    """A benchmark file that cannot become tasks; the message names the file, the entry, the field and the fix."""


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such file") from None
    except ValueError as exc:
        raise SuiteError(f"{path}: not valid JSON ({exc})") from None


def read_jsonl(path: Path) -> list[tuple[str, Any]]:
    """``(where, object)`` for each non-blank line of ``path``; where is ``"<file> line N"``."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such file") from None
    entries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            entries.append((where, json.loads(line)))
        except ValueError as exc:
            raise SuiteError(f"{where}: not valid JSON ({exc}); each line must be one JSON object") from None
    if not entries:
        raise SuiteError(f"{path}: no tasks (an empty file)")
    return entries


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"{path}: no such file") from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: not valid YAML ({exc})") from None


def parse(model: type[_Model], raw: Any, where: str, fields_hint: str) -> _Model:
    """``raw`` validated as ``model``; SuiteError naming ``where`` and each bad field otherwise.

    ``fields_hint`` (``"fields: a, b"``) follows an unknown field, as a likely misspelling.
    """
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise SuiteError(f"{where}: {join_errors(exc, f'misspelled? {fields_hint}')}") from None


def task_id(prefix: str, native_id: str) -> str:
    """An OpenForge task id for a benchmark's own id: lower-case, '-'-joined, at most 48 characters.

    A long id keeps its start and gains a hash of the whole, so two ids that share a
    start stay apart.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", native_id.lower()).strip("-")
    name = f"{prefix}-{slug}" if slug else prefix
    if len(name) <= _MAX_ID:
        return name
    digest = hashlib.sha256(native_id.encode()).hexdigest()[:8]
    return f"{name[: _MAX_ID - 9].rstrip('-')}-{digest}"


def local_file(reference: str, base: Path, where: str) -> Path:
    """A file a benchmark names by URL: a path relative to ``base`` or a ``file://`` URL; never the network."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", reference, re.IGNORECASE) and not reference.startswith("file://"):
        raise SuiteError(
            f"{where}: {reference} is on the network, which rollouts cannot reach; download it next to the "
            "task file and give its path relative to that file instead"
        )
    path = Path(reference.removeprefix("file://"))
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise SuiteError(f"{where}: no file {path}; put it there or fix the path")
    return path


def header(command: str, source: str) -> str:
    """The first lines of a written YAML file: who wrote it, from which entry, and what to change instead.

    ``source`` is an entry as errors name it (``/path/tasks.jsonl line 2``); the header keeps
    its file name only, so the written folders do not depend on where the source was.
    """
    return f"# Written by `{command}` from {Path(source).name};\n# change the source, not this file.\n"


def dump_yaml(command: str, source: str, data: dict) -> str:
    return header(command, source) + yaml.safe_dump(data, sort_keys=False, width=1000, allow_unicode=True)


@dataclass
class TaskFolder:
    """One task folder to write: texts by relative path, and files or folders copied in."""

    id: str
    source: str  # the entry it came from, for errors
    files: dict[str, str]
    copies: dict[str, Path] = field(default_factory=dict)


def write_folders(out: Path, folders: Iterable[TaskFolder]) -> list[Path]:
    """Write every folder under ``out``, each replaced whole, so a rerun leaves the same files."""
    folders = list(folders)
    seen: dict[str, str] = {}
    for folder in folders:
        if folder.id in seen:
            raise SuiteError(
                f"{folder.source} and {seen[folder.id]} both become task {folder.id!r}; give them distinct ids"
            )
        seen[folder.id] = folder.source
    written = []
    for folder in folders:
        root = out / folder.id
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for name, text in folder.files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        for name, source in folder.copies.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, root / name)
            else:
                shutil.copyfile(source, root / name)
        written.append(root)
    return written
