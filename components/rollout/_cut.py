"""The runner's side of the straggler cut: ask the recording proxy whether the iteration is cut.

The serve step declares the cut (components/engine/cut_watch.py) and the engine serves
it; the proxy relays it at ``PROXY_CUT_ROUTE``. The answer is cached for ``every_s``, so
the process runner's 0.1 s stop checks cost one request per poll. An unreachable proxy
or engine never cuts: the rollout then runs to its end or its time limit as before.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable

from components.engine.cut_route import PROXY_CUT_ROUTE

POLL_S = 2.0
_ASK_TIMEOUT_S = 5.0


class CutPoll:
    def __init__(self, proxy_url: str, every_s: float = POLL_S) -> None:
        self.url, self.every_s = f"{proxy_url}{PROXY_CUT_ROUTE}", every_s
        self._next = 0.0
        self._reason: str | None = None

    def reason(self) -> str | None:
        """Why the iteration was cut, once it is; None until then."""
        now = time.monotonic()
        if self._reason is None and now >= self._next:
            self._next = now + self.every_s
            try:
                with urllib.request.urlopen(self.url, timeout=_ASK_TIMEOUT_S) as resp:
                    state = json.loads(resp.read())
            except (OSError, ValueError):
                return None
            if isinstance(state, dict) and state.get("cut") is True:
                self._reason = str(state.get("reason") or "the straggler cut")
        return self._reason


def first_reason(*checks: Callable[[], str | None] | None) -> Callable[[], str | None] | None:
    """One stop check from several: the first reason any of them gives."""
    present = [check for check in checks if check is not None]
    if not present:
        return None
    return lambda: next((reason for reason in (check() for check in present) if reason), None)
