"""Sending a request the upstream never received again, a bounded number of times.

An engine restarting (a new checkpoint), or a pooled connection it closed while idle,
fails a call before the engine saw it; a short backoff turns that into a slower call
instead of a failed rollout step. Nothing that reached the engine is ever sent twice.
"""

from __future__ import annotations

import asyncio
import random
from typing import Awaitable, Callable, Protocol, TypeVar

from components.proxy.errors import ProxyError

T = TypeVar("T")
FIRST_DELAY_S = 0.25
MAX_DELAY_S = 2.0


class Attempts(Protocol):
    upstream_attempts: int


async def deliver(send: Callable[[bytes], Awaitable[T]], body: bytes, call: Attempts, retries: int) -> T:
    """``send(body)``, again after a backoff while it fails undelivered, at most ``retries`` more times.

    ``call.upstream_attempts`` ends as the number of sends made, for the record.
    """
    delay = FIRST_DELAY_S
    while True:
        try:
            return await send(body)
        except ProxyError as err:
            if not err.undelivered or call.upstream_attempts > retries:
                if call.upstream_attempts > 1:
                    err.message += f" (after {call.upstream_attempts} attempts; --upstream-retries sets how many)"
                    err.args = (err.message,)
                raise
        # Jitter spreads the retries of many sessions hit by the same engine restart.
        await asyncio.sleep(delay * random.uniform(0.5, 1.0))
        delay = min(delay * 2, MAX_DELAY_S)
        call.upstream_attempts += 1
