"""Token provenance: answers the proxy returned go back to the engine as the ids it sampled."""

from components.proxy.provenance._route import Route, TokenProvenance

__all__ = ["Route", "TokenProvenance"]
