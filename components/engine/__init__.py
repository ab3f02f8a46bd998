"""The dev inference engine: a tiny local model behind vLLM's OpenAI-compatible API.

On a CPU the dev engine stands in for vLLM: same endpoints, field names and shapes,
token ids and logprobs included, so the recording proxy cannot tell the two apart.
See docs/engine.md for where it differs.

Names are imported on first use so that the CLI (which imports this package) starts
without loading aiohttp, pydantic or torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "init_tiny_model": "components.engine.tiny_model",
    "serve": "components.engine.server",
    "build_app": "components.engine.server",
    "policy_version_of": "components.engine.server",
    "EngineStartError": "components.engine.server",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
