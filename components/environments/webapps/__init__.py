"""Seeded web apps for offline GUI tasks. Each app module has the same four functions:
``build_world(seed)``, ``goals(world)``, ``new_state()`` and ``add_routes(app, world, state)``."""

from components.environments.webapps import flights, form, shop

APPS = {"shop": shop, "form": form, "flights": flights}
