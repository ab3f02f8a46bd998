"""Gate on an engine being ready to serve a given policy: healthy, and serving that version.

The check reads ``/v1/models`` with the proxy's own parser, so the model and version
it accepts are exactly the ones the proxy will send to and record: the dev engine and
vLLM pass or fail it alike.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Callable

_PROBE_TIMEOUT_S = 5.0


class EngineNotReady(RuntimeError):
    """The engine did not become healthy, died, or serves another policy; the message says which."""


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=_PROBE_TIMEOUT_S) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def served_policy(base_url: str) -> tuple[str | None, str | None]:
    """(model the proxy would call, its policy version) according to ``/v1/models``."""
    from components.proxy.upstream import parse_models

    status, body = _get(f"{base_url}/v1/models")
    if status != 200:
        raise EngineNotReady(f"{base_url}/v1/models answered {status or 'nothing'}")
    try:
        models = parse_models(body)
    except (ValueError, json.JSONDecodeError) as exc:
        raise EngineNotReady(f"{base_url}/v1/models is not a model list: {exc}") from None
    return models.first_id, models.policy_version(None)


def wait_until_serving(
    base_url: str,
    expected_version: str,
    timeout_s: float,
    *,
    exited: Callable[[], Any] = lambda: None,
    poll_s: float = 1.0,
) -> str:
    """Block until ``/health`` is 200 and the default model serves ``expected_version``; returns the model.

    ``exited`` returns the engine process's exit code, or None while it runs, so a crash
    fails at once instead of after the timeout.
    """
    deadline = time.monotonic() + timeout_s
    while _get(f"{base_url}/health")[0] != 200:
        code = exited()
        if code is not None:
            raise EngineNotReady(f"the engine exited with code {code} before {base_url}/health answered; see its log above")
        if time.monotonic() > deadline:
            raise EngineNotReady(
                f"{base_url}/health did not answer 200 within {timeout_s:.0f} s; raise engine.startup_timeout_s "
                "if the model is large"
            )
        time.sleep(poll_s)
    model, version = served_policy(base_url)
    if version != expected_version:
        raise EngineNotReady(
            f"{base_url} serves policy version {version!r} (model {model!r}) but this iteration needs "
            f"{expected_version!r}: the engine loaded another checkpoint"
        )
    return model or ""
