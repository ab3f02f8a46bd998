"""Token provenance: answers the proxy returned go back to the engine as the ids it sampled.

Exports load on first use (``components.core.lazy``): the route talks to the engine with
aiohttp, which the pure splicing and memory modules beside it do not need.
"""

from components.core.lazy import lazy_exports

__all__ = ["Route", "TokenProvenance"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Route": "components.proxy.provenance._route:Route",
        "TokenProvenance": "components.proxy.provenance._route:TokenProvenance",
    },
)
