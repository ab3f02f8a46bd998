"""The recording proxy: serves harness model calls from the engine and records each one.

Exports load on first use (``components.core.lazy``), so ``openforge --help`` never
imports aiohttp or pydantic.
"""

from components.core.lazy import lazy_exports

__all__ = ["ProxyConfig", "build_app", "serve_proxy", "session_token", "start_proxy"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ProxyConfig": "components.proxy.config:ProxyConfig",
        "build_app": "components.proxy.app:build_app",
        "serve_proxy": "components.proxy.serve:serve_proxy",
        "session_token": "components.proxy.auth:session_token",
        "start_proxy": "components.proxy.serve:start_proxy",
    },
)
