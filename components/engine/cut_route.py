"""The engine's straggler-cut route: ``GET /openforge/cut`` answers whether the iteration is cut.

The serve step decides the cut (``cut_watch.py``) and writes its state to a file; this
module serves that file. It imports nothing but the standard library because vLLM loads
it by name (``--middleware``) from its working directory, in its own interpreter, where
OpenForge is not installed; the dev engine serves the same file through ``read_cut_file``.
docs/reliability.md, "The straggler cut".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CUT_ROUTE = "/openforge/cut"
# Where a rollout runner asks its recording proxy, which asks the engine's CUT_ROUTE.
PROXY_CUT_ROUTE = "/cut"
CUT_FILE_ENV = "OPENFORGE_CUT_FILE"
# What vLLM imports: this file, copied under this module name into its working directory.
VLLM_MODULE = "openforge_cut_route"
VLLM_MIDDLEWARE = f"{VLLM_MODULE}.CutRoute"
NOT_CUT = b'{"cut": false}'


def read_cut_file(path: str | Path | None) -> bytes:
    """The cut state the serve step wrote (JSON); not cut while there is none."""
    if not path:
        return NOT_CUT
    try:
        return Path(path).read_bytes() or NOT_CUT
    except OSError:
        return NOT_CUT


class CutRoute:
    """ASGI middleware (what vLLM's ``--middleware`` takes): the cut route, everything else passed on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("path") != CUT_ROUTE or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        body = read_cut_file(os.environ.get(CUT_FILE_ENV))
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
