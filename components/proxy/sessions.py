"""Which rollout a call belongs to: the session id, and where it came from.

Order (docs/proxy.md, "Sessions"): an explicit id in the URL path, then harness headers, then the
W3C ``traceparent`` trace id, then ``default``. The id names a file on disk, so only a
safe alphabet is accepted: a bad id in the path is refused, a bad header value is hashed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Mapping

from components.proxy.errors import ProxyError

SESSION_ID_RULE = "letters, digits, '.', '_' and '-', at most 128 characters, not starting with '.'"
DEFAULT_SESSION = "default"

_SAFE_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,127}")
_SESSION_HEADERS = ("x-claude-code-session-id", "session-id")
# traceparent: version-traceid-parentid-flags; an all-zero trace id is invalid per the spec.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def is_safe_session_id(value: str) -> bool:
    return _SAFE_ID.fullmatch(value) is not None


def check_path_session_id(value: str) -> str:
    """A session id taken from ``/s/<id>/``: refused (400) unless it is safe as a file name."""
    if not is_safe_session_id(value):
        raise ProxyError(
            400,
            f"session id {value[:140]!r} in the URL path is not allowed: use {SESSION_ID_RULE}",
            param="session_id",
            code="invalid_session_id",
        )
    return value


def call_session(path_session: str | None, headers: Mapping[str, str]) -> str:
    """A call's session: the ``/s/<id>/`` path segment (checked), else what its headers name."""
    return check_path_session_id(path_session) if path_session is not None else session_from_headers(headers)


ATTEMPT_RULE = "an integer from 1 to 99 (the rollout runner's retry number; the first attempt uses /s/<id>/v1)"
_ATTEMPT = re.compile(r"[1-9][0-9]?")


def check_path_attempt(value: str) -> int:
    """The attempt number of ``/s/<id>/a/<attempt>/``: refused (400) unless it is 1..99."""
    if _ATTEMPT.fullmatch(value) is None:
        raise ProxyError(
            400,
            f"attempt {value[:20]!r} in the URL path is not allowed: use {ATTEMPT_RULE}",
            param="attempt",
            code="invalid_attempt",
        )
    return int(value)


def session_from_headers(headers: Mapping[str, str]) -> str:
    """The session id harness headers name; never raises, never returns an unsafe id."""
    for name in _SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return _safe_or_hashed(value.strip())
    traceparent = headers.get("traceparent")
    if traceparent:
        match = _TRACEPARENT.fullmatch(traceparent.strip().lower())
        if match and match.group(1) != "0" * 32:
            return match.group(1)
    return DEFAULT_SESSION


def _safe_or_hashed(value: str) -> str:
    # Hashing (not stripping characters) keeps distinct header values in distinct files.
    if is_safe_session_id(value):
        return value
    return "h-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
