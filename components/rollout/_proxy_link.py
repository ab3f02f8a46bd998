"""What the runner asks the recording proxy, over plain HTTP: the harness's key, the engine's health, a flush.

The runner holds no client library: urllib is enough for three small calls, and the
runner's imports stay light (it starts once per rollout).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from components.core.rollout_identity import flush_url
from components.proxy.auth import SECRET_ENV, session_token

API_KEY = "openforge-rollout"  # what harnesses send when the proxy checks no key (they insist on one)
PROXY_TIMEOUT_S = 10.0


def harness_api_key(rollout_id: str) -> str:
    """The key the harness sends: its session's token when the proxy requires one (docs/proxy.md).

    The runner holds the secret; the harness gets only the token, which opens this
    rollout's session and no other (the secret's variable is stripped from its env).
    """
    secret = os.environ.get(SECRET_ENV, "").strip()
    return session_token(secret.encode(), rollout_id) if secret else API_KEY


def proxy_requires_tokens(proxy_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{proxy_url}/health", timeout=PROXY_TIMEOUT_S) as resp:
            return bool(json.loads(resp.read()).get("session_tokens_required"))
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return False  # an older or unusual proxy: the harness's calls will say what is wrong


def wait_for_engine(proxy_url: str, deadline: float) -> str | None:
    """Poll the proxy's upstream health until it answers 200; the last problem when time runs out."""
    problem = "no answer yet"
    while time.monotonic() < deadline:
        try:
            wait_s = min(5.0, max(deadline - time.monotonic(), 0.1))  # never overrun the deadline by much
            with urllib.request.urlopen(f"{proxy_url}/health?upstream=1", timeout=wait_s) as resp:
                if resp.status == 200:
                    return None
        except urllib.error.HTTPError as exc:
            try:
                problem = json.loads(exc.read()).get("error") or f"HTTP {exc.code}"
            except ValueError:
                problem = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            problem = f"recording proxy not reachable: {exc}"
        time.sleep(min(0.5, max(deadline - time.monotonic(), 0)))
    return problem


def flush_session(proxy_url: str, session_id: str, api_key: str) -> int | None:
    """Ask the proxy to flush the session's file; the number of calls it holds. Raises OSError or ValueError."""
    request = urllib.request.Request(flush_url(proxy_url, session_id), method="POST", headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request, timeout=PROXY_TIMEOUT_S) as resp:
        return json.loads(resp.read()).get("sessions", {}).get(session_id)
