"""The trajectory viewer: runs, iterations, rollouts and training rows from a store, as web pages."""

from components.core.lazy import lazy_exports

__all__ = ["Viewer"]
__getattr__, __dir__ = lazy_exports(__name__, {"Viewer": "components.viewer.app:Viewer"})
