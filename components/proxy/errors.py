"""Errors the proxy answers with, and how upstream failures map onto them.

Every failure becomes a ``ProxyError`` carrying an HTTP status and a message that names
the cause and, where there is one, the fix; surfaces render it in their API's own shape.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson
from aiohttp import web

from components.proxy.http_client import (
    UpstreamConnectError,
    UpstreamConnectTimeout,
    UpstreamDisconnected,
    UpstreamTLSError,
)

_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


class ProxyError(Exception):
    """A request the proxy answers with an error instead of a completion."""

    undelivered = False  # set when the upstream never received the request: safe to send again

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,
        param: str | None = None,
        code: str | int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or _TYPE_BY_STATUS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        self.param = param
        self.code = code
        self.headers = headers or {}


def openai_error_body(err: ProxyError) -> dict[str, Any]:
    """OpenAI's error shape, which OpenAI SDKs parse into their exception types."""
    # OpenAI's schema types `code` as a string; vLLM's errors carry the HTTP status as a number.
    code = err.code if err.code is None or isinstance(err.code, str) else str(err.code)
    return {"error": {"message": err.message, "type": err.type, "param": err.param, "code": code}}


def error_response(err: ProxyError, body: dict[str, Any] | None = None) -> web.Response:
    """The HTTP answer for ``err``; ``body`` is a surface's own error shape (OpenAI's by default)."""
    return web.Response(
        status=err.status,
        body=orjson.dumps(body if body is not None else openai_error_body(err)),
        content_type="application/json",
        headers=err.headers,
    )


def bad_request(message: str, *, param: str | None = None) -> ProxyError:
    return ProxyError(400, message, param=param)


def upstream_exception(exc: BaseException, upstream: str, timeout_s: float) -> ProxyError:
    """Map a failure talking to the upstream onto 502 (unreachable/broken) or 504 (too slow)."""
    if isinstance(exc, UpstreamConnectTimeout):
        return ProxyError(
            504, f"upstream {upstream} did not accept a connection in time; is it overloaded?", code="upstream_timeout"
        )
    if isinstance(exc, TimeoutError):
        return ProxyError(
            504,
            f"upstream {upstream} did not answer within {timeout_s:g}s; "
            "raise --upstream-timeout-s or check the engine's load",
            code="upstream_timeout",
        )
    if isinstance(exc, UpstreamConnectError):
        errno = getattr(exc.os_error, "errno", None)
        reason = os.strerror(errno).lower() if errno else str(exc.os_error or exc)
        return ProxyError(
            502,
            f"upstream {upstream} is unreachable: {reason}; is the engine running?",
            code="upstream_unreachable",
        )
    if isinstance(exc, UpstreamTLSError):
        return ProxyError(502, f"upstream {upstream}: {exc}; check its certificate and URL", code="upstream_unreachable")
    if isinstance(exc, ConnectionError):
        return ProxyError(
            502, f"upstream {upstream} closed the connection mid-answer ({exc!r})", code="upstream_disconnected"
        )
    return ProxyError(502, f"upstream {upstream} failed: {exc!r}", code="upstream_error")


def undelivered(exc: BaseException) -> bool:
    """For a failure raised before any response header arrived: could the engine not have the request?

    Only these are retried. Once the engine answered, a generation may have been sampled,
    and sending the request again would sample another the harness never asked for; a
    read timeout means the engine has the request and is slow, not that it never got it.
    """
    if isinstance(exc, (UpstreamConnectTimeout, UpstreamConnectError)):
        return True  # refused, unreachable, or not accepted in time: the engine has nothing
    if isinstance(exc, UpstreamDisconnected):
        return exc.before_response  # typically a pooled connection the engine had closed while idle
    # Slow (a read timeout: the engine has the request), a TLS problem, or a reset after
    # the request went out: trying again does not help, or could sample a second answer.
    return False


def upstream_status_error(status: int, body: bytes, upstream: str, retry_after: str | None) -> ProxyError:
    """Pass an upstream 4xx/5xx through with its status, keeping the engine's own message."""
    detail, err_type, param, code = _engine_error_fields(body)
    headers = {}
    if status == 429:
        # Some harnesses treat a 429 without Retry-After as fatal (docs/proxy.md, "Limits and security").
        headers["Retry-After"] = retry_after or "1"
    return ProxyError(
        status,
        f"upstream {upstream} answered {status}: {detail}",
        type=err_type,
        param=param,
        code=code,
        headers=headers,
    )


def _engine_error_fields(body: bytes) -> tuple[str, str | None, str | None, Any]:
    """Read vLLM's error shapes: ``{"error": {...}}`` and the older flat ``{"object": "error", ...}``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", "replace").strip()
        return (text[:500] or "(empty body)"), None, None, None
    if isinstance(data, dict):
        inner = data.get("error") if isinstance(data.get("error"), dict) else data
        message = inner.get("message") or inner.get("detail") or data
        param = inner.get("param")
        return (
            str(message),
            inner.get("type") if isinstance(inner.get("type"), str) else None,
            param if isinstance(param, str) else None,
            inner.get("code"),
        )
    return str(data)[:500], None, None, None
