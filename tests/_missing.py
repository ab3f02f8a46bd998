"""What a test does when a program or an install it needs is missing: skip, saying why, when
run by hand; fail, saying why, under ``CI=true``.

`make test` installs everything the suite needs (vLLM's CPU build, the podman image,
Chromium and the X programs, bubblewrap, every pinned harness), so on CI a missing one is
a broken install, and a suite that skipped over it would pass without having run the
tests that needed it. Only GPU and cluster tests skip everywhere, with their reasons
(tests/conftest.py).

A test calls ``missing(reason)`` where it would have called ``pytest.skip``, or
``require(problem)`` with a check's answer (None: nothing is missing); a module that cannot
run at all is marked ``needs(problem)``, or ``needs_sandbox()``.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

CI_ENV = "CI"


def in_ci() -> bool:
    """``CI`` set to true (or 1, yes), as `.ci/run`'s machines and most CI services set it."""
    return os.environ.get(CI_ENV, "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip with ``reason``; under CI=true, fail with it instead."""
    if in_ci():
        pytest.fail(f"{CI_ENV}=true, so this fails instead of skipping: {reason}", pytrace=False)
    pytest.skip(reason)


def require(problem: str | None) -> None:
    """``missing(problem)`` when there is one."""
    if problem:
        missing(problem)


def needs(problem: str | None) -> pytest.MarkDecorator:
    """The mark of a test (or, as ``pytestmark``, a module) that cannot run while ``problem``
    holds; tests/conftest.py's ``pytest_runtest_setup`` calls ``missing(problem)`` for it."""
    return pytest.mark.needs(problem)


def needs_sandbox() -> pytest.MarkDecorator:
    """``needs`` for the sandbox runtime (bubblewrap and util-linux's namespace tools)."""
    from pipelines.executor import sandbox_problem

    problem = sandbox_problem()
    return needs(problem and f"no sandbox here: {problem}")


def harness_problem(name: str) -> str | None:
    """Why the harness ``name`` cannot run here (not installed at its pin), or None."""
    from components.rollout.harnesses import get_harness

    adapter = get_harness(name)
    if adapter.is_installed():
        return None
    return f"{name} {adapter.version} is not installed: run `openforge harness install {name}` (make test does)"


def require_harness(name: str) -> None:
    """``missing`` unless the harness ``name`` is installed at its pin."""
    require(harness_problem(name))
