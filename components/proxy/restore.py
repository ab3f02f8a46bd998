"""A restarted proxy picks a session up where its file ends.

The proxy keeps two things per session in memory: the token ids of the answers it
returned (token provenance puts them back when the harness echoes an answer) and the
digests of recent requests (retry tags). Both are rebuilt from the session file the first
time a session is seen after a start, before its call is routed or tagged, so a sidecar
killed mid-rollout continues the rollout's rows instead of breaking them.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import orjson

from components.core.rollout_identity import trajectory_file
from components.proxy.call_tags import CallTagger
from components.proxy.provenance import TokenProvenance

_log = logging.getLogger(__name__)


class SessionRestorer:
    """Reads each session's file once per proxy run; counts what it restored (``/health``)."""

    def __init__(self, out: Path, tagger: CallTagger, provenance: TokenProvenance | None) -> None:
        self._out = out
        self._tagger = tagger
        self._provenance = provenance
        self._seen: dict[str, asyncio.Future[None]] = {}
        self.sessions_restored = 0
        self.answers_restored = 0
        self.unreadable_lines = 0
        self.unreadable_files = 0

    async def ensure(self, session_id: str) -> None:
        """Return once the session's earlier calls, if any, are known again."""
        seen = self._seen.get(session_id)
        if seen is None:  # the first call of this session since start reads the file; others wait on it
            seen = self._seen[session_id] = asyncio.ensure_future(self._restore(session_id))
        await asyncio.shield(seen)

    async def _restore(self, session_id: str) -> None:
        path = self._out / trajectory_file(session_id)
        try:
            records, unreadable = await asyncio.to_thread(_read_records, path)
        except OSError as exc:  # the session goes on without its memory (chat path, untagged retries), counted
            self.unreadable_files += 1
            _log.error("cannot read %s back after a restart (%s): its earlier calls are not restored", path, exc)
            return
        self.unreadable_lines += unreadable
        if not records:
            return
        self._tagger.restore(session_id, records)
        answers = 0 if self._provenance is None else self._provenance.restore(session_id, records)
        self.sessions_restored += 1
        self.answers_restored += answers
        _log.info(
            "session %s continues its file: %d earlier calls, %d answers for token provenance%s",
            session_id, len(records), answers, f", {unreadable} unreadable lines skipped" if unreadable else "",
        )

    def counters(self) -> dict[str, int]:
        return {
            "sessions_restored": self.sessions_restored,
            "answers_restored": self.answers_restored,
            "restore_unreadable_lines": self.unreadable_lines,
            "restore_unreadable_files": self.unreadable_files,
        }


def _read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The file's records with their call_index (position), and how many lines did not parse."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    records, unreadable = [], 0
    for index, line in enumerate(data.splitlines()):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            unreadable += 1
            continue
        record["call_index"] = index  # the recorder numbers calls by line, whatever a line says
        records.append(record)
    return records, unreadable
