"""Chromium and the X programs, for every test that needs them (the GUI environments, web
rollouts, browser harnesses).

`make test` installs them in the background while pip runs (Makefile: system-background)
and names its status file in OPENFORGE_GUI_PACKAGES_STATUS; these fixtures wait for it,
then skip, saying why, only where the programs are still missing (fail under CI=true:
tests/_missing.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests._background_installs import background_install_problem
from tests._missing import require

STATUS_ENV = "OPENFORGE_GUI_PACKAGES_STATUS"
CHROMIUM = "/usr/bin/chromium"
DESKTOP_PROGRAMS = ("Xvfb", "openbox", "xdotool", "xprop", "xterm")


def _install_problem() -> str | None:
    return background_install_problem(STATUS_ENV, "GUI package install", "gui-packages")


def chromium_problem() -> str | None:
    """Why Chromium cannot be driven here (the background install failed, the browser or
    Python Playwright is missing), or None."""
    problem = _install_problem()
    if problem is None and not Path(CHROMIUM).is_file():
        problem = f"{CHROMIUM} is missing (apt-get install -y chromium chromium-driver)"
    if problem is None:
        try:
            import playwright  # noqa: F401
        except ImportError:
            problem = "Python Playwright is not installed (the test extra pins it)"
    return problem


def desktop_problem() -> str | None:
    """Why the X desktop cannot run here (the background install failed or a program is missing), or None."""
    problem = _install_problem()
    absent = [p for p in DESKTOP_PROGRAMS if shutil.which(p) is None]
    if problem is None and absent:
        problem = f"{', '.join(absent)} missing (apt-get install -y xvfb openbox xdotool x11-utils xterm)"
    return problem


@pytest.fixture(scope="session")
def chromium_ready() -> None:
    require(chromium_problem())


@pytest.fixture(scope="session")
def desktop_ready() -> None:
    require(desktop_problem())
