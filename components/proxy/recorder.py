"""Append-only session files: one ``RecordedCall`` JSON line per call, one ``os.write`` each.

Durability: each record reaches the kernel (page cache) in a single ``write`` on an
``O_APPEND`` descriptor before the harness sees the end of its answer, so killing the
proxy (even ``kill -9``) loses nothing already answered. ``fsync`` additionally protects
against a machine crash; it runs in a worker thread on a duplicated descriptor so the
event loop never blocks and an LRU eviction cannot close the descriptor underneath it.

A kill can still cut the one ``write`` short (a full disk, a kill inside the kernel copy):
such a line never reached its harness, which will retry. At start the recorder moves a torn
last line aside (``torn/<session_id>.torn``) so the file stays valid JSONL and the next
record does not land on the torn bytes; ``torn_lines_repaired`` counts them.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable

import orjson

from components.core.rollout_identity import TRAJECTORY_GLOB, trajectory_file, trajectory_session

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_MODE = 0o600  # trajectories hold prompts and outputs: owner-only
TORN_DIR = "torn"  # under the output directory: torn last lines moved out of session files
_log = logging.getLogger(__name__)


class RecordingError(OSError):
    """A record could not be written; the call is failed rather than silently unrecorded."""


class Recorder:
    """Owns the session files under one output directory (one writer process per directory)."""

    def __init__(self, out: Path, *, max_open_files: int = 256, fsync_each: bool = False) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.fsync_each = fsync_each
        self.calls_recorded = 0
        self._max_open = max_open_files
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._counts: dict[str, int] = {}
        self._sizes: dict[str, int] = {}  # bytes per session file: known once, then counted, never re-stat'ed
        self.torn_lines_repaired = 0
        for path in sorted(out.glob(TRAJECTORY_GLOB)):  # before any append: one writer per directory
            if not path.is_symlink():  # session files are never links (opened with O_NOFOLLOW)
                self._repair_torn_tail(path)

    def path(self, session_id: str) -> Path:
        return self.out / trajectory_file(session_id)

    def write(self, session_id: str, record: dict[str, Any]) -> int:
        """Give the record the session's next ``call_index``, append it, and return that index."""
        try:
            fd = self._fd(session_id)
            index = self._counts[session_id]
            record["call_index"] = index
            line = orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
            _write_all(fd, line)
        except OSError as exc:
            raise RecordingError(exc.errno, f"cannot append to {self.path(session_id)}: {exc.strerror or exc}") from exc
        self._sizes[session_id] += len(line)
        self._counts[session_id] = index + 1
        self.calls_recorded += 1
        return index

    def count(self, session_id: str) -> int:
        """Calls recorded in the session's file (including those from earlier proxy runs)."""
        known = self._counts.get(session_id)
        return known if known is not None else _count_lines(self.path(session_id))

    def size(self, session_id: str) -> int:
        """Bytes in the session's file: read from disk once per session, then counted as written."""
        size = self._sizes.get(session_id)
        if size is None:
            try:
                size = self.path(session_id).stat().st_size
            except FileNotFoundError:
                size = 0
            self._sizes[session_id] = size
        return size

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    async def sync(self, session_ids: Iterable[str] | None = None) -> None:
        """fsync the given sessions' files (all known sessions when None) and the directory."""
        ids = list(self._counts) if session_ids is None else list(session_ids)
        fds = [self._dup_for_sync(sid) for sid in ids]
        await asyncio.to_thread(_fsync_and_close, [fd for fd in fds if fd is not None], self.out)

    def close(self) -> None:
        while self._fds:
            _, fd = self._fds.popitem()
            os.close(fd)

    def _fd(self, session_id: str) -> int:
        fd = self._fds.get(session_id)
        if fd is not None:
            self._fds.move_to_end(session_id)
            return fd
        if session_id not in self._counts:  # resume numbering after a restart
            self._counts[session_id] = _count_lines(self.path(session_id))
        fd = os.open(self.path(session_id), _OPEN_FLAGS, _FILE_MODE)
        self._fds[session_id] = fd
        if session_id not in self._sizes:
            self._sizes[session_id] = os.fstat(fd).st_size
        if len(self._fds) > self._max_open:
            _, oldest = self._fds.popitem(last=False)
            os.close(oldest)
        return fd

    def _repair_torn_tail(self, path: Path) -> None:
        with path.open("r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            keep = _end_of_last_line(fh, size)
            if keep == size:
                return
            fh.seek(keep)
            torn = fh.read()
            aside = self.out / TORN_DIR / f"{trajectory_session(path.name)}.torn"
            aside.parent.mkdir(exist_ok=True)
            # Kept (one torn tail per line) before the session file loses it: a crash between
            # the two steps can duplicate the bytes, never lose them.
            fd = os.open(aside, _OPEN_FLAGS, _FILE_MODE)
            try:
                _write_all(fd, torn + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            fh.truncate(keep)
        self.torn_lines_repaired += 1
        _log.warning(
            "session file %s ended in a torn line (%d bytes, cut by a kill mid-write): moved to %s",
            path, size - keep, aside,
        )

    def _dup_for_sync(self, session_id: str) -> int | None:
        fd = self._fds.get(session_id)
        if fd is not None:
            return os.dup(fd)
        try:  # evicted or never opened here: its data still sits in the page cache
            return os.open(self.path(session_id), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None


def _write_all(fd: int, data: bytes) -> None:
    # A regular-file write is only short when the disk is full; finish or fail loudly.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(0, "short write")
        view = view[written:]


def _end_of_last_line(fh: Any, size: int) -> int:
    """Offset just past the file's last newline (0 when it has none)."""
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        fh.seek(start)
        block = fh.read(end - start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def _fsync_and_close(fds: list[int], directory: Path) -> None:
    try:
        for fd in fds:
            os.fsync(fd)
        # New session files are only durable once their directory entry is.
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        for fd in fds:
            os.close(fd)
