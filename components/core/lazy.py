"""Lazy package faces (PEP 562): a package lists its exports and imports each on first use.

A package's ``__init__`` that imports its modules eagerly makes every import of any of its
submodules pay for all of them: ``openforge --help`` would load aiohttp, pydantic and the
experiment config only because a CLI module lives in the same package. With this helper a
package names where each export lives and nothing is imported until someone asks::

    __all__ = ["Task", "load_task"]
    __getattr__, __dir__ = lazy_exports(__name__, {
        "Task": "components.rollout.tasks:Task",
        "load_task": "components.rollout.tasks:load_task",
    })
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, whose ``exports`` map name -> ``"module:attr"``."""
    homes = {name: _split(name, target) for name, target in exports.items()}

    def __getattr__(name: str) -> Any:
        try:
            module, attr = homes[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attr)
        # Kept on the package, so the next look-up is a plain attribute read.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__


def _split(name: str, target: str) -> tuple[str, str]:
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"export {name!r}: {target!r} is not 'module:attr'")
    return module, attr
