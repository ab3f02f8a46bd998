"""The dev inference engine: a tiny local model behind vLLM's OpenAI-compatible API.

On a CPU the dev engine stands in for vLLM: same endpoints, field names and shapes,
token ids and logprobs included, so the recording proxy cannot tell the two apart.
See docs/engine.md for where it differs.

Exports load on first use (``components.core.lazy``) so that the CLI (which imports this
package) starts without loading aiohttp, pydantic or torch.
"""

from components.core.lazy import lazy_exports

__all__ = ["EngineStartError", "build_app", "init_tiny_model", "policy_version_of", "serve"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "init_tiny_model": "components.engine.tiny_model:init_tiny_model",
        "serve": "components.engine.server:serve",
        "build_app": "components.engine.server:build_app",
        "policy_version_of": "components.engine.server:policy_version_of",
        "EngineStartError": "components.engine.server:EngineStartError",
    },
)
