"""The recording proxy: serves harness model calls from the engine and records each one.

Exports load on first use, so ``openforge --help`` never imports aiohttp or pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["ProxyConfig", "build_app", "serve_proxy", "session_token", "start_proxy"]

_HOMES = {
    "ProxyConfig": "components.proxy.config",
    "build_app": "components.proxy.app",
    "serve_proxy": "components.proxy.serve",
    "session_token": "components.proxy.auth",
    "start_proxy": "components.proxy.serve",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'components.proxy' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
