"""Lazy package faces: a package names its exports and imports each only when asked."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

from components.core.lazy import lazy_exports

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def package(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("lazy_face_sample")
    module.__getattr__, module.__dir__ = lazy_exports(
        module.__name__, {"dedent": "textwrap:dedent", "Decimal": "decimal:Decimal"}
    )
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_an_export_is_the_named_attribute_and_stays_on_the_package(package: types.ModuleType) -> None:
    import textwrap

    assert package.dedent is textwrap.dedent
    assert vars(package)["dedent"] is textwrap.dedent  # the next read skips __getattr__


def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="'lazy_face_sample' has no attribute 'nothing'"):
        package.nothing  # noqa: B018


def test_dir_lists_exports_not_yet_loaded(package: types.ModuleType) -> None:
    assert {"dedent", "Decimal"} <= set(dir(package))


def test_a_target_without_its_attribute_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="'textwrap' is not 'module:attr'"):
        lazy_exports("sample", {"dedent": "textwrap"})


def test_importing_a_package_face_imports_none_of_its_exports() -> None:
    code = "import sys, components.rollout, components.reward; print('components.rollout.runner' in sys.modules, 'pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


def _faces() -> list[str]:
    """Every package of the repository whose ``__init__`` is a lazy face."""
    inits = [*REPO.glob("components/**/__init__.py"), *REPO.glob("pipelines/**/__init__.py")]
    return sorted(
        ".".join(p.parent.relative_to(REPO).parts) for p in inits if "lazy_exports(" in p.read_text()
    )


@pytest.mark.parametrize("name", _faces())
def test_every_export_of_a_face_resolves(name: str) -> None:
    """A name that moved or was renamed breaks here, not in the first caller that asks for it."""
    package = importlib.import_module(name)
    missing = [export for export in package.__all__ if not hasattr(package, export)]
    assert not missing, f"{name} exports names its modules do not have: {missing}"
