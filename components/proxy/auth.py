"""Per-session API keys: a harness may only write to the session its key was made for.

With a secret configured, the token for session ``S`` is an HMAC of ``S`` under that
secret. The rollout runner derives it (``session_token``) and gives it to the harness as
its API key, so a harness (or anything it runs) cannot read or pollute another rollout's
trajectory, and the proxy keeps no token table: it recomputes and compares.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Mapping

SECRET_ENV = "OPENFORGE_PROXY_SECRET"  # read by `openforge proxy` and by the rollout runner
TOKEN_PREFIX = "ofs1-"  # the version: a new derivation gets a new prefix, old tokens fail cleanly
_KEY_HEADERS = ("x-api-key", "api-key")  # Anthropic SDK; Azure-style OpenAI clients
_MAX_CACHED = 4096


def session_token(secret: bytes, session_id: str) -> str:
    """The API key a harness must send for ``session_id`` when the proxy holds ``secret``."""
    digest = hmac.new(secret, session_id.encode("utf-8"), hashlib.sha256).hexdigest()
    return TOKEN_PREFIX + digest


def presented_keys(headers: Mapping[str, str]) -> list[str]:
    """Every API key the request carries, in the places SDKs put them."""
    keys = []
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            keys.append(value.strip())
    for name in _KEY_HEADERS:
        value = headers.get(name)
        if value and value.strip():
            keys.append(value.strip())
    return keys


class SessionAuth:
    """Checks a request's key against its session's token; a no-op without a secret."""

    def __init__(self, secret: bytes | None) -> None:
        self._secret = secret
        self._tokens: dict[str, bytes] = {}  # an HMAC per call would cost more than the check itself
        self.refused = 0

    @property
    def enabled(self) -> bool:
        return self._secret is not None

    def check(self, headers: Mapping[str, str], session_id: str) -> None:
        """Raise 401 (no key) or 403 (a key not made for this session) unless the request may proceed."""
        if self._secret is None:
            return
        keys = presented_keys(headers)
        if not keys:
            self.refused += 1
            raise _refusal(
                401,
                f"this proxy requires a per-session API key: send the token for session {session_id!r} as "
                "'Authorization: Bearer <token>', 'x-api-key' or 'api-key' "
                "(the rollout runner derives it with components.proxy.auth.session_token)",
                code="missing_session_token",
            )
        expected = self._token(session_id)
        # Every key is compared, in constant time: which one matched must not show in the timing.
        matched = False
        for key in keys:
            matched |= hmac.compare_digest(key.encode("utf-8", "surrogatepass"), expected)
        if not matched:
            self.refused += 1
            raise _refusal(
                403,
                f"the API key sent is not valid for session {session_id!r}: each session has its own token; "
                "use the one the rollout runner derived for this session",
                code="invalid_session_token",
            )

    def _token(self, session_id: str) -> bytes:
        token = self._tokens.get(session_id)
        if token is None:
            if len(self._tokens) >= _MAX_CACHED:
                self._tokens.clear()
            token = self._tokens[session_id] = session_token(self._secret, session_id).encode("ascii")
        return token


def _refusal(status: int, message: str, code: str) -> Exception:
    # Imported on a refusal only: the rollout runner imports this module for session_token,
    # and the errors module brings aiohttp, which the runner otherwise never needs.
    from components.proxy.errors import ProxyError

    return ProxyError(status, message, code=code)
