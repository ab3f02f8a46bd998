"""Chromium and the X programs, for every test that needs them (the GUI environments, web
rollouts, browser harnesses).

`make test` installs them in the background while pip runs (Makefile: system-background)
and names its status file in OPENFORGE_GUI_PACKAGES_STATUS; these fixtures wait for it,
then skip, saying why, only where the programs are still missing.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

STATUS_ENV = "OPENFORGE_GUI_PACKAGES_STATUS"
INSTALL_WAIT_S = 900
CHROMIUM = "/usr/bin/chromium"
DESKTOP_PROGRAMS = ("Xvfb", "openbox", "xdotool", "xprop", "xterm")


def _install_problem() -> str | None:
    """Wait for `make test`'s background apt install; why it failed, or None."""
    status_path = os.environ.get(STATUS_ENV)
    if not status_path:
        return None
    status = Path(status_path)
    deadline = time.monotonic() + INSTALL_WAIT_S
    while not status.exists() and time.monotonic() < deadline:
        time.sleep(1)
    if not status.exists():
        return f"the background GUI package install did not finish in {INSTALL_WAIT_S} s"
    code = status.read_text().strip()
    if code != "0":
        log = status.with_suffix(".log")
        tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
        return f"`make gui-packages` failed (exit {code}): {tail.strip()}"
    return None


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
