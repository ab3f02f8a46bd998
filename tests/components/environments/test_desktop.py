"""The desktop environment on real Xvfb, openbox and xdotool: a window, a click, typing that a
shell obeys, a screenshot of the display's size, the step limit, and a clean teardown."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from components.environments import DesktopEnvironment, EnvironmentSetupError, StepLimitExceeded
from components.environments.processes import is_running


def _wait_for(check, timeout_s: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} not met within {timeout_s}s")


@pytest.fixture
def desktop(desktop_ready: None) -> Iterator[DesktopEnvironment]:
    env = DesktopEnvironment({"width": 800, "height": 600, "max_steps": 3})
    env.setup()
    yield env
    env.teardown()


def test_click_and_type_into_xterm_then_teardown_leaves_nothing(desktop: DesktopEnvironment, tmp_path: Path) -> None:
    xterm = desktop.launch(["xterm", "-T", "openforge-term", "-geometry", "60x10+20+20"])
    _wait_for(lambda: "openforge-term" in desktop.window_names(), what="the xterm window")
    out = tmp_path / "typed.txt"
    desktop.click(120, 100)
    desktop.type_text(f"echo desktop-ok > {out}")
    desktop.key("Return")
    assert _wait_for(lambda: out.exists() and out.read_text(), what=f"{out} written").strip() == "desktop-ok"

    image = Image.open(io.BytesIO(desktop.screenshot()))
    assert image.format == "PNG" and image.size == (800, 600)
    # The window shows: xterm's white background inside it, the bare black root outside.
    assert image.convert("RGB").getpixel((100, 120)) == (255, 255, 255)
    assert image.convert("RGB").getpixel((790, 590)) == (0, 0, 0)

    display, pids = desktop.display, desktop.pids()
    assert xterm.pid in pids and len(pids) >= 3  # Xvfb, openbox, xterm (and its shell)
    desktop.teardown()
    assert desktop.pids() == [] and not any(is_running(pid) for pid in pids)
    assert not Path(f"/tmp/.X{display.lstrip(':')}-lock").exists()


def test_step_limit_raises_and_reset_gives_a_fresh_display(desktop: DesktopEnvironment) -> None:
    desktop.key("shift")
    desktop.key("shift")
    desktop.click(5, 5)
    with pytest.raises(StepLimitExceeded, match=r"desktop environment: step limit of 3 reached, refused step 4"):
        desktop.type_text("x")
    old = desktop.pids()
    desktop.reset()
    assert desktop.steps.taken == 0 and not any(is_running(pid) for pid in old)
    desktop.key("shift")
    assert desktop.env()["DISPLAY"] == desktop.display


def test_missing_programs_name_the_apt_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentSetupError, match="Xvfb is not on PATH; install it with: apt-get install -y xvfb"):
        DesktopEnvironment().setup()


def test_bad_config_names_the_field() -> None:
    with pytest.raises(EnvironmentSetupError, match="desktop environment config: depth: Input should be 16 or 24"):
        DesktopEnvironment({"depth": 32})
