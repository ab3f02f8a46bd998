"""Chromium and the X programs, for every test that needs them (the GUI environments, web
rollouts, browser harnesses).

`make test` installs them in the background while pip runs (Makefile: system-background)
and names its status file in OPENFORGE_GUI_PACKAGES_STATUS; these fixtures wait for it,
then skip, saying why, only where the programs are still missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests._background_installs import background_install_problem

STATUS_ENV = "OPENFORGE_GUI_PACKAGES_STATUS"
CHROMIUM = "/usr/bin/chromium"
DESKTOP_PROGRAMS = ("Xvfb", "openbox", "xdotool", "xprop", "xterm")


def _install_problem() -> str | None:
    return background_install_problem(STATUS_ENV, "GUI package install", "gui-packages")


@pytest.fixture(scope="session")
def chromium_ready() -> None:
    problem = _install_problem()
    if problem is None and not Path(CHROMIUM).is_file():
        problem = f"{CHROMIUM} is missing (apt-get install -y chromium chromium-driver)"
    if problem is None:
        try:
            import playwright  # noqa: F401
        except ImportError:
            problem = "Python Playwright is not installed (the test extra pins it)"
    if problem:
        pytest.skip(problem)


@pytest.fixture(scope="session")
def desktop_ready() -> None:
    problem = _install_problem()
    missing = [p for p in DESKTOP_PROGRAMS if shutil.which(p) is None]
    if problem is None and missing:
        problem = f"{', '.join(missing)} missing (apt-get install -y xvfb openbox xdotool x11-utils xterm)"
    if problem:
        pytest.skip(problem)
