"""Session ids: where they come from, and that none can escape the output directory."""

from __future__ import annotations

import pytest

from components.proxy.errors import ProxyError
from components.proxy.sessions import check_path_session_id, is_safe_session_id, session_from_headers

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_claude_code_header_wins_over_other_headers() -> None:
    from multidict import CIMultiDict  # aiohttp's header mapping: case-insensitive

    headers = CIMultiDict(
        {"X-Claude-Code-Session-Id": "cc-1", "session-id": "codex-1", "traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}
    )
    assert session_from_headers(headers) == "cc-1"


def test_codex_session_header_then_traceparent_then_default() -> None:
    assert session_from_headers({"session-id": "codex-1"}) == "codex-1"
    assert session_from_headers({"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}) == TRACE_ID
    assert session_from_headers({"traceparent": "garbage"}) == "default"
    assert session_from_headers({}) == "default"


@pytest.mark.parametrize("value", ["../../etc/passwd", "a/b", ".hidden", "x" * 129, "sp ace", "é"])
def test_unsafe_header_values_become_hashed_safe_ids(value: str) -> None:
    session = session_from_headers({"session-id": value})
    assert is_safe_session_id(session) and "/" not in session and session.startswith("h-")
    assert session_from_headers({"session-id": value}) == session  # stable: same rollout, same file


@pytest.mark.parametrize("value", ["..", ".git", "a b", "x" * 129, "a\\b", ""])
def test_unsafe_path_session_ids_are_refused_naming_the_rule(value: str) -> None:
    with pytest.raises(ProxyError) as caught:
        check_path_session_id(value)
    assert caught.value.status == 400 and "letters, digits" in caught.value.message


@pytest.mark.parametrize("value", ["task-3_s1", "a.b", "0" * 128, "9f2c-uuid"])
def test_safe_path_session_ids_are_accepted(value: str) -> None:
    assert check_path_session_id(value) == value
