"""The seeded web apps by the name a task file gives (``app: shop``)."""

from types import ModuleType

from components.environments.webapps import flights, form, shop

APPS: dict[str, ModuleType] = {"shop": shop, "form": form, "flights": flights}
