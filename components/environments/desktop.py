"""An X desktop the rollout owns: Xvfb on a free display, openbox, xdotool for input.

Desktop agents (cua-agent) drive whatever ``DISPLAY`` names; this environment makes one
that exists only for the rollout. Xvfb picks its own free display (``-displayfd``: no race
with parallel rollouts guessing numbers) and listens on no TCP port; a window manager
is needed because agents click title bars and expect focus to follow windows.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from components.environments.base import EnvironmentSetupError, StepCounter, parse_config, require_program
from components.environments.processes import kill_and_wait, pids_in_sessions

DESKTOP_PACKAGES = "xvfb openbox xdotool x11-utils"
_X_SOCKETS = Path("/tmp/.X11-unix")


class DesktopConfig(BaseModel):
    """The virtual screen of one rollout (validated at the edge: ``DesktopEnvironment(config=dict)``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    width: int = Field(1280, ge=200, le=7680)
    height: int = Field(800, ge=200, le=4320)
    depth: Literal[16, 24] = Field(24, description="Bits per pixel; 24 is what screenshot tools expect.")
    window_manager: bool = Field(True, description="Run openbox (title bars, focus, stacking).")
    max_steps: int = Field(50, ge=1, description="Steps taken through the environment before StepLimitExceeded.")
    start_timeout_s: float = Field(10.0, gt=0)


class DesktopEnvironment:
    """``setup()``, then ``env()`` for the harness; ``launch`` apps; steps, ``screenshot``; ``teardown()``."""

    def __init__(self, config: DesktopConfig | Mapping[str, Any] | None = None) -> None:
        self.config = parse_config(DesktopConfig, config, "desktop environment")
        self.steps = StepCounter(self.config.max_steps, "desktop environment")
        self.display: str | None = None
        self._processes: list[subprocess.Popen] = []
        self._wm_log: IO[bytes] | None = None

    def setup(self) -> None:
        """Start Xvfb (and openbox); EnvironmentSetupError naming the apt packages when one is missing."""
        xvfb = require_program("Xvfb", DESKTOP_PACKAGES)
        for program in ("xdotool", "xprop") + (("openbox",) if self.config.window_manager else ()):
            require_program(program, DESKTOP_PACKAGES)
        # -noreset: by default Xvfb resets when its last client leaves, and a client that
        # connects during the reset fails ("Failed to open the display": 1 openbox start in
        # 10 here after a probe client).
        argv = [str(xvfb), "-screen", "0", f"{self.config.width}x{self.config.height}x{self.config.depth}",
                "-nolisten", "tcp", "-noreset"]
        read_end, write_end = os.pipe()
        try:
            self._start([*argv, "-displayfd", str(write_end)], pass_fds=(write_end,))
        finally:
            os.close(write_end)
        try:
            self.display = f":{self._read_display(read_end)}"
        finally:
            os.close(read_end)
        if self.config.window_manager:
            # openbox's own words, for the error message when it fails to start.
            self._wm_log = tempfile.TemporaryFile()
            self._start(["openbox", "--sm-disable"], env={**os.environ, **self.env()},
                        stdout=self._wm_log, stderr=self._wm_log)
            self._wait_for_window_manager()

    def _start(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, start_new_session=True,
            **{"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, **kwargs},
        )
        self._processes.append(process)
        return process

    def _read_display(self, read_end: int) -> str:
        # Xvfb writes the display number and a newline once it accepts clients.
        deadline = time.monotonic() + self.config.start_timeout_s
        os.set_blocking(read_end, False)
        text = b""
        while not text.endswith(b"\n") and time.monotonic() < deadline:
            try:
                text += os.read(read_end, 16)
            except BlockingIOError:
                if self._processes[0].poll() is not None:
                    break
                time.sleep(0.01)
        if not text.endswith(b"\n"):
            self.teardown()
            raise EnvironmentSetupError(f"Xvfb did not report a display within {self.config.start_timeout_s:g}s")
        return text.decode().strip()

    def _wait_for_window_manager(self) -> None:
        deadline = time.monotonic() + self.config.start_timeout_s
        probe = None
        while time.monotonic() < deadline and self._processes[-1].poll() is None:
            # Not _NET_SUPPORTING_WM_CHECK: openbox sets it ~50 ms before it manages
            # windows, and a window mapped in between stays unmapped and unframed (2 xmessage
            # starts in 25 here). _NET_CLIENT_LIST comes with the end of its start-up.
            probe = self._x(["xprop", "-root", "_NET_CLIENT_LIST"], check=False)
            if "_NET_CLIENT_LIST(WINDOW)" in probe.stdout:
                return
            time.sleep(0.02)
        openbox = self._processes[-1].poll()
        self._wm_log.seek(0)
        said = self._wm_log.read().decode(errors="replace").strip()[-1000:]
        self.teardown()
        last = probe and (probe.stdout + probe.stderr).strip()
        state = f"openbox exited with code {openbox}: {said}" if openbox is not None else f"last probe: {last!r}"
        raise EnvironmentSetupError(
            f"openbox did not take over the display within {self.config.start_timeout_s:g}s ({state})"
        )

    def env(self) -> dict[str, str]:
        """What a harness or app needs to use this display (cua-agent's pyautogui needs the session type)."""
        if self.display is None:
            raise EnvironmentSetupError("the desktop environment is not set up; call setup() first")
        return {"DISPLAY": self.display, "XDG_SESSION_TYPE": "x11"}

    def launch(self, argv: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        """Start a program on this display (part of the task's set-up, not an agent step).

        ``env``: the program's environment (default: this process's), plus the display's.
        """
        return self._start(argv, cwd=cwd, env={**(os.environ if env is None else env), **self.env()})

    def _x(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env={**os.environ, **self.env()}, capture_output=True, text=True,
                              timeout=10, check=check)

    def window_names(self) -> list[str]:
        """Titles of the visible, titled windows (for tests and verifiers that check window state)."""
        ids = self._x(["xdotool", "search", "--onlyvisible", "--name", "."], check=False).stdout.split()
        names = (self._x(["xdotool", "getwindowname", wid], check=False).stdout.strip() for wid in ids)
        return [name for name in names if name]

    def screenshot(self) -> bytes:
        """PNG of the whole screen."""
        from PIL import ImageGrab

        buffer = io.BytesIO()
        ImageGrab.grab(xdisplay=self.env()["DISPLAY"]).save(buffer, format="PNG")
        return buffer.getvalue()

    # Steps: each counts towards max_steps.
    def click(self, x: int, y: int, button: int = 1) -> None:
        self.steps.take(f"click {x},{y}")
        self._x(["xdotool", "mousemove", "--sync", str(x), str(y), "click", str(button)])

    def type_text(self, text: str) -> None:
        self.steps.take(f"type {len(text)} characters")
        self._x(["xdotool", "type", "--delay", "5", "--", text])

    def key(self, *keys: str) -> None:
        self.steps.take(f"key {' '.join(keys)}")
        self._x(["xdotool", "key", "--", *keys])

    def reset(self) -> None:
        """A new episode: a new, empty display (the number may change), steps at 0."""
        self.teardown()
        self.setup()
        self.steps.reset()

    def pids(self) -> list[int]:
        """Every live process started here, and anything they forked that stayed in their session."""
        return pids_in_sessions({p.pid for p in self._processes})

    def teardown(self) -> None:
        """Stop the apps, the window manager and Xvfb (last); leaves nothing running."""
        display, sessions = self.display, list(reversed(self._processes))
        xvfb_pid = self._processes[0].pid if self._processes else None
        for process in sessions:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in sessions:
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
        survivors = kill_and_wait(self.pids())
        self._processes, self.display = [], None
        if self._wm_log is not None:
            self._wm_log.close()
            self._wm_log = None
        if display is not None:
            _remove_stale_lock(display.lstrip(":"), xvfb_pid)
        if survivors:
            raise RuntimeError(f"desktop processes {survivors} of display {display} survived SIGKILL")

    def __enter__(self) -> "DesktopEnvironment":
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()


def _remove_stale_lock(number: str, xvfb_pid: int | None) -> None:
    # Xvfb removes its lock and socket on SIGTERM, not when killed, and a stale lock blocks
    # the number. Only our own Xvfb's: another rollout may hold the number by now.
    lock = Path(f"/tmp/.X{number}-lock")
    try:
        owner = int(lock.read_text().strip())
    except (OSError, ValueError):
        return
    if owner == xvfb_pid:
        lock.unlink(missing_ok=True)
        (_X_SOCKETS / f"X{number}").unlink(missing_ok=True)
