"""Admission of model calls: who may call (session tokens), how many at once, how much per session.

Every check runs before the body is read and before the upstream sees anything, so a
refused call costs a few comparisons and is never recorded. Overload is answered at once
with 429 and ``Retry-After`` rather than queued: a queue would hide the overload from the
harness's SDK, whose own retry-with-backoff is the backpressure that works across processes.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiohttp import web

from components.proxy.auth import SessionAuth
from components.proxy.config import ProxyConfig
from components.proxy.errors import ProxyError
from components.proxy.recorder import Recorder


class Admission:
    """Counts the calls in flight and refuses those over a limit, with a ProxyError naming the option."""

    def __init__(self, config: ProxyConfig, recorder: Recorder) -> None:
        secret = config.session_secret
        self.auth = SessionAuth(None if secret is None else secret.get_secret_value())
        self._recorder = recorder
        self._max_in_flight = config.max_in_flight
        self._retry_after = str(config.retry_after_s)
        self._max_session_mb = config.max_session_mb
        self._max_session_bytes = int(config.max_session_mb * 2**20)
        self._max_request_mb = config.max_request_mb
        self.in_flight = 0
        self.refused_busy = 0
        self.refused_session_too_large = 0

    def admit(self, headers: Mapping[str, str], session_id: str) -> None:
        """Raise the refusal for this call, if any; the caller then counts it in flight until it ends."""
        self.auth.check(headers, session_id)
        if self._recorder.size(session_id) > self._max_session_bytes:
            self.refused_session_too_large += 1
            raise ProxyError(
                413,
                f"session {session_id!r} already holds more than {self._max_session_mb:g} MB of records "
                "(max_session_mb); its file is kept as is. Start a new session, or raise --max-session-mb",
                code="session_too_large",
            )
        if self.in_flight >= self._max_in_flight:
            self.refused_busy += 1
            raise ProxyError(
                429,
                f"the proxy is serving its maximum of {self._max_in_flight} calls at once (max_in_flight); "
                f"retry after {self._retry_after}s, or raise --max-in-flight",
                code="proxy_overloaded",
                headers={"Retry-After": self._retry_after},  # without it Codex gives up at once
            )

    def request_too_large(self, exc: web.HTTPRequestEntityTooLarge) -> ProxyError:
        """aiohttp's body-size refusal, as an error the surface can render in its own shape."""
        return ProxyError(
            413,
            f"{exc.text}; the proxy accepts request bodies up to {self._max_request_mb:g} MB: "
            "raise --max-request-mb to accept larger ones",
            code="request_too_large",
        )

    def counters(self) -> dict[str, Any]:
        """What /health reports about admission (no secrets)."""
        return {
            "calls_in_flight": self.in_flight,
            "calls_refused_busy": self.refused_busy,
            "calls_refused_session_too_large": self.refused_session_too_large,
            "calls_refused_auth": self.auth.refused,
            "session_tokens_required": self.auth.enabled,
        }
