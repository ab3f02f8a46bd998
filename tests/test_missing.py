"""tests/_missing.py: a missing install skips a test when run by hand and fails it under CI=true,
naming the install, for each thing `make test` installs: vLLM, podman, Chromium and the X
programs, bubblewrap and every harness."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests._gui_packages import STATUS_ENV as GUI_STATUS_ENV
from tests._gui_packages import chromium_problem, desktop_problem
from tests._missing import harness_problem, missing, needs, require_harness
from tests._vllm import STATUS_ENV as VLLM_STATUS_ENV
from tests._vllm import vllm_python
from tests.conftest import pytest_runtest_setup
from tests.e2e.test_podman_runtime import PODMAN_STATUS_ENV, podman_here_problem

from components.rollout.harnesses import HARNESSES, get_harness
from pipelines.executor import _isolation


def _outcome(check: Callable[[], object]) -> tuple[str, str]:
    """("skipped" | "failed" | "ran", message) of ``check``."""
    try:
        check()
    except pytest.skip.Exception as exc:
        return "skipped", str(exc)
    except pytest.fail.Exception as exc:
        return "failed", str(exc)
    return "ran", ""


@pytest.fixture(params=["by hand", "CI"])
def ci(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Each case by hand (CI unset) and on CI (CI=true)."""
    if request.param == "CI":
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    return request.param == "CI"


def _failed_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status_env: str) -> None:
    """The background install behind ``status_env`` ended with exit 2, its log ending in a pip error."""
    status = tmp_path / "install.status"
    status.with_suffix(".log").write_text("ERROR: No matching distribution found for the-pinned-thing==9.9\n")
    status.write_text("2\n")
    monkeypatch.setenv(status_env, str(status))


def _expect(ci: bool, check: Callable[[], object], *names: str) -> None:
    outcome, message = _outcome(check)
    assert outcome == ("failed" if ci else "skipped"), message
    for name in names:
        assert name in message, message


def test_ci_counts_as_on_for_true_1_and_yes_and_off_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, on in [("true", True), ("1", True), ("YES", True), ("false", False), ("", False)]:
        monkeypatch.setenv("CI", value)
        assert _outcome(lambda: missing("x is missing"))[0] == ("failed" if on else "skipped"), value


def test_a_failed_vllm_install(ci: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failed_install(tmp_path, monkeypatch, VLLM_STATUS_ENV)
    python, why = vllm_python()
    assert python is None
    _expect(ci, lambda: missing(why), "`make vllm` failed", "No matching distribution")


def test_a_failed_podman_image_build(ci: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failed_install(tmp_path, monkeypatch, PODMAN_STATUS_ENV)
    problem = podman_here_problem()
    assert problem is not None
    _expect(ci, lambda: missing(problem), "`make podman-base` failed", "No matching distribution")


def test_a_failed_chromium_and_desktop_install(ci: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failed_install(tmp_path, monkeypatch, GUI_STATUS_ENV)
    for problem in (chromium_problem(), desktop_problem()):
        assert problem is not None
        _expect(ci, lambda problem=problem: missing(problem), "`make gui-packages` failed")


def test_a_missing_bubblewrap_through_the_needs_mark(ci: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, unshare, nsenter or setpriv on it
    _isolation.sandbox_problem.cache_clear()
    try:
        problem = _isolation.sandbox_problem()
    finally:
        _isolation.sandbox_problem.cache_clear()
    assert problem is not None and "bwrap" in problem

    _expect(ci, lambda: pytest_runtest_setup(_Marked(problem)), "bwrap", "make sandbox-packages")
    assert _outcome(lambda: pytest_runtest_setup(_Marked(None)))[0] == "ran"  # nothing missing: the test runs


class _Marked:
    """What pytest_runtest_setup reads of a test item marked ``needs(problem)``."""

    def __init__(self, problem: str | None) -> None:
        self._mark = needs(problem).mark

    def iter_markers(self, name: str) -> list[pytest.Mark]:
        return [self._mark] if name == "needs" else []


@pytest.mark.parametrize("name", [name for name in HARNESSES if get_harness(name).installer is not None])
def test_a_harness_not_installed_at_its_pin(ci: bool, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(type(get_harness(name)), "is_installed", lambda self: False)
    assert harness_problem(name) is not None
    _expect(ci, lambda: require_harness(name), f"openforge harness install {name}")


def test_an_installed_harness_is_no_problem() -> None:
    assert harness_problem("reference") is None  # built in: nothing to install
