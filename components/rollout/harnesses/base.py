"""The harness adapter contract: how to install and launch one agent harness for one rollout.

The rollout runner knows nothing about any particular harness. An adapter turns the
rollout's facts (proxy base URL, key, prompt, workspace, time left) into a command line
and the environment variables that harness reads, and later fetches the final answer
from wherever that harness leaves it (a file, its JSON on stdout, ...). Adapters of
third-party harnesses also know their pinned version and how to install it.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from components.core.config import HarnessConfig
from components.rollout.harnesses._install import (
    HarnessNotInstalledError,
    Installer,
    InstallResult,
    harness_home,
    is_installed,
)


@dataclass(frozen=True)
class HarnessRun:
    """What one rollout asks of a harness."""

    rollout_id: str
    base_url: str  # <proxy>/s/<rollout_id>/v1: the rollout id in the path groups the calls
    api_key: str  # a placeholder: the proxy holds no real credentials and checks none
    model: str  # a name for the harness to send; the proxy substitutes the served model
    prompt: str
    workspace: Path  # the harness's working directory, a fresh copy of the task's files
    scratch_dir: Path  # private to the adapter (config files, answer file), outside the workspace
    max_turns: int
    max_tokens: int
    time_limit_s: float = 120.0  # time left for the harness; the runner kills it after that anyway
    # The runner's Chromium (http://127.0.0.1:<port>), for harnesses that drive a browser
    # over CDP; None when the rollout has no browser (docs/environments.md).
    browser_cdp_url: str | None = None
    # The runner's X display (":N") for harnesses that drive a desktop; None when there is none.
    display: str | None = None
    # Whether the runner confines the harness (its own user and PID namespaces, the grader
    # and the records out of reach: components/rollout/_confine.py).
    confined: bool = False

    @property
    def home(self) -> Path:
        """The throwaway HOME the runner gives the harness (its config and session files land here)."""
        return self.scratch_dir / "home"


@dataclass(frozen=True)
class HarnessCommand:
    """A command line and the environment variables it needs on top of the runner's base env."""

    argv: list[str]
    env: dict[str, str]


class HarnessAdapter(ABC):
    """Launches one kind of harness; one instance serves many rollouts."""

    name: ClassVar[str]
    installer: ClassVar[Installer | None] = None  # None: part of OpenForge, nothing to install
    home: Path | None = None  # where harnesses are installed; harness_home() when unset
    # True: the runner starts a browser for every rollout of this harness, web task or not.
    needs_browser: ClassVar[bool] = False
    # True: the runner starts an X display for every rollout of this harness, desktop task or not.
    needs_desktop: ClassVar[bool] = False
    # Choice mode (components/core/choices.py): a harness that sends every step as a fresh
    # conversation, without assistant turns, names the regex that reads its step (1-based)
    # off the prompt; None: the turn is the number of assistant messages.
    choice_turn_pattern: ClassVar[str | None] = None
    # A harness that shows the model numbered page elements names the regex of the number
    # written before an element's description, so candidates can name elements by what
    # the page says of them (components/core/choices.py); None: they cannot.
    choice_element_pattern: ClassVar[str | None] = None

    @abstractmethod
    def command(self, run: HarnessRun) -> HarnessCommand:
        """The command that runs the harness headless on ``run.prompt`` in ``run.workspace``."""

    @abstractmethod
    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        """The harness's final answer once it exited (None when it left none)."""

    def configure(self, config: HarnessConfig) -> None:
        """Take the experiment's per-harness settings (``harness.mode``); most harnesses have none."""

    # -- installation ----------------------------------------------------------------

    @property
    def version(self) -> str:
        """The pinned version (``built-in`` for harnesses that ship with OpenForge)."""
        return self.installer.pins[0].version if self.installer else "built-in"

    @property
    def folder(self) -> Path:
        return (self.home or harness_home()) / self.name

    def is_installed(self) -> bool:
        if self.installer is None:
            return True
        return is_installed(self.folder, self.installer.pins) and self.installer.runtime_ready(self.folder.parent)

    def require_installed(self) -> None:
        if not self.is_installed():
            raise HarnessNotInstalledError(
                f"harness {self.name} {self.version} is not installed under {self.folder}; "
                f"install it with `openforge harness install {self.name}`"
            )

    def install(self) -> InstallResult | None:
        """Install the pinned version (a no-op when it is there); None for built-in harnesses."""
        if self.installer is None:
            return None
        return self.installer.ensure(self.name, self.folder.parent)

    def executable(self, program: str) -> str:
        """The installed program's path (the harness must be installed)."""
        assert self.installer is not None, f"{self.name} installs no programs"
        for folder in self.installer.bin_dirs(self.folder, self.folder.parent):
            if (folder / program).exists():
                return str(folder / program)
        raise HarnessNotInstalledError(
            f"{program} is missing from the {self.name} install at {self.folder}; "
            f"reinstall it with `rm -r {self.folder} && openforge harness install {self.name}`"
        )

    def path_env(self) -> dict[str, str]:
        """PATH with the harness's own executables and runtime (e.g. the pinned Node) first."""
        if self.installer is None:
            return {}
        dirs = [str(d) for d in self.installer.bin_dirs(self.folder, self.folder.parent)]
        return {"PATH": os.pathsep.join([*dirs, os.environ.get("PATH", "")])}


def read_json_output(stdout: str) -> Any:
    """The last JSON document a harness printed on stdout (harnesses may log lines before it)."""
    text = stdout.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    # Logs first, JSON last: try from each line that opens an object, last one first.
    lines = text.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        if lines[start].lstrip().startswith("{"):
            try:
                return json.loads("\n".join(lines[start:]))
            except ValueError:
                continue
    return None


def answer_in_json_file(path: Path, key: str) -> str | None:
    """The non-empty string at ``key`` of the JSON object a driver wrote to ``path`` (None when there is none)."""
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    answer = result.get(key) if isinstance(result, dict) else None
    return answer if isinstance(answer, str) and answer else None
