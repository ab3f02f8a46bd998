"""The session files: numbering, resumption after a restart, permissions, bounded descriptors."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import orjson

from components.proxy.recorder import Recorder


def _indexes(path: Path) -> list[int]:
    return [orjson.loads(line)["call_index"] for line in path.read_bytes().splitlines()]


def test_calls_are_numbered_per_session_in_append_order(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    for session in ["a", "b", "a", "a", "b"]:
        recorder.write(session, {"session_id": session})
    recorder.close()
    assert _indexes(tmp_path / "a.jsonl") == [0, 1, 2]
    assert _indexes(tmp_path / "b.jsonl") == [0, 1]
    assert recorder.counts() == {"a": 3, "b": 2}


def test_restarted_recorder_continues_numbering_from_existing_lines(tmp_path: Path) -> None:
    first = Recorder(tmp_path)
    first.write("s", {})
    first.write("s", {})
    first.close()
    second = Recorder(tmp_path)
    assert second.write("s", {}) == 2
    second.close()
    assert _indexes(tmp_path / "s.jsonl") == [0, 1, 2]


def test_session_files_are_private_to_the_owner(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    recorder.write("s", {})
    recorder.close()
    assert stat.S_IMODE(os.stat(tmp_path / "s.jsonl").st_mode) == 0o600


def test_evicted_descriptors_reopen_and_keep_appending(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path, max_open_files=2)
    for round_ in range(3):
        for session in ["a", "b", "c", "d"]:
            recorder.write(session, {"round": round_})
    assert len(recorder._fds) == 2
    asyncio.run(recorder.sync())  # fsync works for evicted sessions too
    recorder.close()
    for session in "abcd":
        assert _indexes(tmp_path / f"{session}.jsonl") == [0, 1, 2]


def test_each_record_is_one_complete_line(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    recorder.write("s", {"text": "line\nbreaks stay escaped"})
    recorder.close()
    data = (tmp_path / "s.jsonl").read_bytes()
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
