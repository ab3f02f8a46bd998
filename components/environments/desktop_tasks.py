"""Desktop tasks: a task folder whose ``desktop.yaml`` says what is on the screen when the agent starts.

What the rollout runner calls (docs/environments.md, "Desktop tasks")::

    desktop = start_desktop(task.desktop, workspace=..., task_dir=..., env=harness_env)
    harness env |= desktop.env()          # DISPLAY, XDG_SESSION_TYPE=x11
    ... run the harness; the verifier gets desktop.env() too (window checks) ...
    desktop.teardown()

The apps start with the workspace as their working directory and the harness's own
environment (a terminal on the desktop must not hand the agent the runner's variables),
and the harness starts only once each app's window is on the screen. An entry with
``wait_exit: true`` is a set-up command instead (OSWorld's ``execute`` steps,
suites/osworld.py): the next entry starts once it has exited with code 0. The verifier of
the shipped tasks is ``desktop_verify.py``, copied into each task folder as ``verify.py``:
it checks files in the workspace and window titles on the display (``goal.json``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from components.core.validation import join_errors
from components.environments.base import EnvironmentSetupError
from components.environments.desktop import DesktopEnvironment

DESKTOP_FILE = "desktop.yaml"
# Placeholders an app's argv may use; replaced literally.
ARGV_PLACEHOLDERS = ("{workspace}", "{task_dir}")


class DesktopTaskError(ValueError):
    """A desktop.yaml that cannot be used; the message names the file, the field and the fix."""


class DesktopApp(BaseModel):
    """A program started on the display before the harness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: list[str] = Field(min_length=1, description="Command line; {workspace} and {task_dir} are replaced.")
    window: str | None = Field(
        None, min_length=1, description="Title of the window it opens: the harness starts once it is shown."
    )
    wait_exit: bool = Field(
        False, description="A set-up command: the next entry starts once it has exited with code 0 (start_timeout_s)."
    )

    @model_validator(mode="after")
    def _window_or_exit(self) -> "DesktopApp":
        if self.wait_exit and self.window is not None:
            raise ValueError("an entry with wait_exit: true opens no window to wait for; remove window or wait_exit")
        return self


class DesktopTaskSpec(BaseModel):
    """``desktop.yaml``: the screen and the apps the agent finds on it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    width: int = Field(1280, ge=200, le=7680, description="Screen width in pixels.")
    height: int = Field(800, ge=200, le=4320, description="Screen height in pixels.")
    apps: list[DesktopApp] = Field(default_factory=list, description="Started in order, each on the display.")
    start_timeout_s: float = Field(
        20.0, gt=0, description="How long each app's window may take to appear (a set-up command, to exit)."
    )


def load_desktop_spec(task_dir: str | Path) -> DesktopTaskSpec | None:
    """The task's ``desktop.yaml``, validated; None when the task has none (not a desktop task)."""
    path = Path(task_dir) / DESKTOP_FILE
    if not path.exists():
        return None
    try:
        return DesktopTaskSpec.model_validate(yaml.safe_load(path.read_text()) or {})
    except yaml.YAMLError as exc:
        raise DesktopTaskError(f"{path}: not valid YAML ({exc})") from None
    except ValidationError as exc:
        fields = ", ".join(DesktopTaskSpec.model_fields)
        hint = f"misspelled? fields: {fields}; apps[]: argv, window, wait_exit"
        raise DesktopTaskError(f"{path}: {join_errors(exc, hint)}") from None


def start_desktop(
    spec: DesktopTaskSpec | None, *, workspace: Path, task_dir: Path | None, env: dict[str, str]
) -> DesktopEnvironment:
    """A fresh display with the task's apps open (an empty desktop for ``spec=None``).

    ``env`` is the environment the apps run with (the harness's); EnvironmentSetupError
    when the X programs are missing or an app's window does not appear (the display is
    torn down first).
    """
    spec = spec or DesktopTaskSpec()
    desktop = DesktopEnvironment({"width": spec.width, "height": spec.height})
    desktop.setup()
    try:
        values = {"{workspace}": str(workspace), "{task_dir}": str(task_dir or "")}
        for app in spec.apps:
            argv = [_fill(arg, values) for arg in app.argv]
            process = desktop.launch(argv, cwd=workspace, env=env)
            if app.wait_exit:
                _wait_for_exit(process, spec.start_timeout_s)
            elif app.window is not None:
                _wait_for_window(desktop, app.window, process, spec.start_timeout_s)
    except BaseException:
        desktop.teardown()
        raise
    return desktop


def _fill(arg: str, values: dict[str, str]) -> str:
    for placeholder, value in values.items():
        arg = arg.replace(placeholder, value)
    return arg


def _wait_for_exit(process, timeout_s: float) -> None:
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise EnvironmentSetupError(
            f"desktop task set-up command {process.args[0]} did not exit within {timeout_s:g}s; "
            f"check its argv in {DESKTOP_FILE}, or raise start_timeout_s"
        ) from None
    if code != 0:
        raise EnvironmentSetupError(
            f"desktop task set-up command {process.args[0]} exited with code {code}; check its argv in {DESKTOP_FILE}"
        )


def _wait_for_window(desktop: DesktopEnvironment, title: str, process, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if title in desktop.window_names():
            return
        if process.poll() is not None:
            raise EnvironmentSetupError(
                f"desktop task app {process.args[0]} exited with code {process.returncode} before its window "
                f"{title!r} appeared; check its argv in {DESKTOP_FILE}"
            )
        time.sleep(0.05)
    raise EnvironmentSetupError(
        f"no window titled {title!r} appeared within {timeout_s:g}s (windows: {desktop.window_names()}); "
        f"check the app's argv and window in {DESKTOP_FILE}, or raise start_timeout_s"
    )
