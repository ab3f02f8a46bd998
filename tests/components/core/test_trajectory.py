"""The recorded-call schema and its reader: what a valid file is, and how a bad one is named."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from components.core import RecordedCall, TrajectoryError, read_session, read_sessions

DOC = Path(__file__).resolve().parents[3] / "docs" / "trajectory-schema.md"


def _record(index: int, **overrides) -> dict:
    base = {
        "session_id": "s1",
        "call_index": index,
        "api": "chat.completions",
        "request": {"messages": [{"role": "user", "content": "hi"}]},
        "response": {"choices": []},
        "prompt_token_ids": [1, 2, 3],
        "completion_token_ids": [4, 5],
        "completion_logprobs": [-0.5, -0.25],
        "finish_reason": "stop",
        "started_at": 1.0,
        "latency_ms": 2.0,
        "upstream_status": 200,
    }
    return {**base, **overrides}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_reads_valid_session_in_order(tmp_path: Path) -> None:
    calls = read_session(_write(tmp_path / "s1.jsonl", [_record(0), _record(1)]))
    assert [c.call_index for c in calls] == [0, 1]
    assert all(c.ok for c in calls)


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    path.write_bytes(orjson.dumps(_record(0)) + b"\n{not json\n")
    with pytest.raises(TrajectoryError, match=r"s1\.jsonl:2: not valid JSON"):
        read_session(path)


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    path = _write(tmp_path / "s1.jsonl", [_record(0, prompt_token_ids="1 2 3")])
    with pytest.raises(TrajectoryError, match=r":1: invalid record \(prompt_token_ids"):
        read_session(path)


def test_truncated_last_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    path.write_bytes(orjson.dumps(_record(0)) + b"\n" + orjson.dumps(_record(1))[:40])
    with pytest.raises(TrajectoryError, match=r":2: truncated last line"):
        read_session(path)


def test_logprobs_must_match_tokens(tmp_path: Path) -> None:
    path = _write(tmp_path / "s1.jsonl", [_record(0, completion_logprobs=[-0.1])])
    with pytest.raises(TrajectoryError, match="must match one to one"):
        read_session(path)


def test_unknown_major_version_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "s1.jsonl", [_record(0, schema_version="2.0")])
    with pytest.raises(TrajectoryError, match="upgrade OpenForge or re-record"):
        read_session(path)


def test_out_of_order_calls_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "s1.jsonl", [_record(0), _record(2)])
    with pytest.raises(TrajectoryError, match="out of order"):
        read_session(path)


def test_failed_call_is_not_ok() -> None:
    call = RecordedCall.model_validate(
        _record(0, upstream_status=502, error="unreachable", completion_token_ids=[], completion_logprobs=[])
    )
    assert not call.ok


def test_read_sessions_yields_each_file(tmp_path: Path) -> None:
    _write(tmp_path / "b.jsonl", [_record(0, session_id="b")])
    _write(tmp_path / "a.jsonl", [_record(0, session_id="a")])
    assert [sid for sid, _ in read_sessions(tmp_path)] == ["a", "b"]


def test_every_field_is_documented() -> None:
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", DOC.read_text(), flags=re.M))
    assert set(RecordedCall.model_fields) == documented


def test_records_of_the_previous_minor_version_still_read(tmp_path: Path) -> None:
    [call] = read_session(_write(tmp_path / "s1.jsonl", [_record(0, schema_version="1.0")]))
    assert call.translation is None


def test_translation_of_another_api_is_read(tmp_path: Path) -> None:
    translation = {"upstream_request": {"messages": []}, "dropped": ["tools[1] (web_search)"], "ignored": ["thinking"]}
    path = _write(tmp_path / "s1.jsonl", [_record(0, api="anthropic.messages", translation=translation)])
    [call] = read_session(path)
    assert call.translation.dropped == ["tools[1] (web_search)"] and call.translation.mapped == []


def test_fields_of_a_newer_minor_version_are_skipped_but_typos_are_not(tmp_path: Path) -> None:
    [call] = read_session(_write(tmp_path / "a.jsonl", [_record(0, schema_version="1.9", added_later=1)]))
    assert call.ok
    with pytest.raises(TrajectoryError, match="added_later"):
        read_session(_write(tmp_path / "b.jsonl", [_record(0, added_later=1)]))


def test_model_tokens_sum_the_usage_each_answer_reports_in_any_api() -> None:
    from components.core.trajectory import model_tokens

    calls = [
        RecordedCall.model_validate(_record(0, response={"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7}})),
        RecordedCall.model_validate(_record(1, response={"content": [], "usage": {"input_tokens": 50, "output_tokens": 3}})),
        RecordedCall.model_validate(_record(2)),  # an answer without usage counts nothing
    ]
    assert model_tokens(calls) == {"prompt": 150, "completion": 10}
