"""Fixtures for the GUI environments: real Chromium, real Xvfb, real HTTP on 127.0.0.1.

``chromium_ready`` and ``desktop_ready`` (tests/_gui_packages.py, through tests/conftest.py)
wait for `make test`'s background install of the programs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from components.environments import BrowserEnvironment


@pytest.fixture(scope="module")
def browser(chromium_ready: None) -> Iterator[BrowserEnvironment]:
    """One Chromium per test module (launching costs ~1-2 s); tests reset it."""
    env = BrowserEnvironment({"viewport_width": 1024, "viewport_height": 700, "max_steps": 200})
    env.setup()
    yield env
    env.teardown()
