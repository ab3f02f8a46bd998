"""Seeded web apps for offline GUI tasks. Each app module has the same four functions:
``build_world(seed)``, ``goals(world)``, ``new_state()`` and ``add_routes(app, world, state)``.

``APPS`` loads on first use (``components.core.lazy``): the apps serve pages with aiohttp,
which a reader of ``goal.py`` alone (the MiniWoB task writer) does not need.
"""

from components.core.lazy import lazy_exports

__all__ = ["APPS"]

__getattr__, __dir__ = lazy_exports(__name__, {"APPS": "components.environments.webapps._registry:APPS"})
