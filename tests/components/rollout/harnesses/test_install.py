"""Installing harnesses: idempotent per pin, clean after a failure, clear when missing."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from components.core.config import HarnessName
from components.rollout.harnesses import HARNESSES, HarnessInstallError, HarnessNotInstalledError, get_harness
from components.rollout.harnesses._install import Installer, is_installed
from components.rollout.harnesses.versions import Pin
from pipelines.cli import app

PIN = Pin("pip", "fake-harness", "1.0.0")


class CountingInstaller(Installer):
    """Writes a fake executable; counts installs; fails on demand."""

    def __init__(self, pins: tuple[Pin, ...], fail: bool = False) -> None:
        super().__init__(pins)
        self.installs, self.fail = 0, fail

    def install_into(self, folder: Path, home: Path) -> None:
        self.installs += 1
        (folder / "bin").mkdir()
        (folder / "bin" / "fake").write_text("#!/bin/sh\n")
        if self.fail:
            raise HarnessInstallError("the registry said no")

    def bin_dirs(self, folder: Path, home: Path) -> list[Path]:
        return [folder / "bin"]


def test_second_install_of_the_same_pin_is_a_no_op(tmp_path: Path) -> None:
    installer = CountingInstaller((PIN,))

    first = installer.ensure("fake", tmp_path)
    second = installer.ensure("fake", tmp_path)

    assert installer.installs == 1
    assert not first.already_installed and second.already_installed and second.seconds == 0
    assert is_installed(tmp_path / "fake", (PIN,))


def test_changed_pin_reinstalls_from_a_clean_folder(tmp_path: Path) -> None:
    CountingInstaller((PIN,)).ensure("fake", tmp_path)
    (tmp_path / "fake" / "left-over").write_text("from 1.0.0")
    newer = CountingInstaller((Pin("pip", "fake-harness", "2.0.0"),))

    result = newer.ensure("fake", tmp_path)

    assert newer.installs == 1 and not result.already_installed
    assert not (tmp_path / "fake" / "left-over").exists()
    assert not is_installed(tmp_path / "fake", (PIN,))


def test_failed_install_leaves_the_harness_not_installed(tmp_path: Path) -> None:
    with pytest.raises(HarnessInstallError, match="registry said no"):
        CountingInstaller((PIN,), fail=True).ensure("fake", tmp_path)

    assert not is_installed(tmp_path / "fake", (PIN,))
    assert CountingInstaller((PIN,)).ensure("fake", tmp_path).already_installed is False


@pytest.mark.parametrize("name", ["claude-code", "codex", "openclaw", "mini-swe-agent"])
def test_missing_harness_error_names_the_install_command(name: str, tmp_path: Path) -> None:
    adapter = get_harness(name, home=tmp_path)

    assert not adapter.is_installed()
    with pytest.raises(HarnessNotInstalledError, match=f"`openforge harness install {name}`"):
        adapter.require_installed()


def test_reference_harness_is_built_in() -> None:
    adapter = get_harness("reference")
    assert adapter.is_installed() and adapter.install() is None and adapter.version == "built-in"


def test_config_accepts_exactly_the_harnesses_that_have_adapters() -> None:
    assert set(get_args(HarnessName)) == set(HARNESSES)


def test_unknown_harness_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="use one of: reference, claude-code"):
        get_harness("claude")


def test_harness_list_shows_pins_and_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENFORGE_HARNESS_HOME", str(tmp_path))

    result = CliRunner().invoke(app, ["harness", "list"])

    assert result.exit_code == 0, result.output
    assert "reference        built-in" in result.output
    codex = get_harness("codex")
    assert f"codex            {codex.version}" in result.output
    assert "missing: openforge harness install codex" in result.output


@pytest.mark.parametrize(
    ("args", "problem"),
    [(["nope"], "no harness named nope"), ([], "name the harnesses to install, or pass --all"),
     (["codex", "--all"], "not both")],  # fmt: skip
)
def test_harness_install_refuses_bad_names(args: list[str], problem: str) -> None:
    result = CliRunner().invoke(app, ["harness", "install", *args])

    assert result.exit_code == 2
    assert problem in result.output


class _SlowAdapter:
    """An adapter whose install waits for every other install to have started (or fails)."""

    def __init__(self, name: str, started: "threading.Barrier", fail: bool) -> None:
        self.name, self.version, self._started, self._fail = name, "1.0", started, fail

    def install(self):
        self._started.wait(timeout=10)  # raises BrokenBarrierError when installs run one by one
        if self._fail:
            raise HarnessInstallError("the registry said no")
        return None


def test_install_all_runs_installs_at_once_and_reports_every_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import components.rollout.harnesses as harnesses

    started = threading.Barrier(len(HARNESSES))
    adapters = {name: _SlowAdapter(name, started, fail=name == "codex") for name in HARNESSES}
    monkeypatch.setattr(harnesses, "get_harness", adapters.__getitem__)

    result = CliRunner().invoke(app, ["harness", "install", "--all"])

    assert result.exit_code == 1
    assert "error: installing codex 1.0 failed: the registry said no" in result.output
    assert result.output.count("built in, nothing to install") == len(HARNESSES) - 1


def test_a_pip_venv_installed_without_bytecode_is_compiled_once_in_place(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from components.rollout.harnesses._install import PipVenvInstaller

    folder = tmp_path / "fake"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    python = folder / "venv" / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())  # fmt: skip
    (site / "fake_harness.py").write_text("VALUE = 1\n")
    (site / "py2_fixture.py").write_text("print 'a file a package ships that never compiles'\n")
    # What an install before pip_install compiled bytecode left: the right pins, no bytecode.
    (folder / "installed.json").write_text(json.dumps({"pins": [PIN.spec]}))

    result = PipVenvInstaller((PIN,)).ensure("fake", tmp_path)

    assert result.already_installed
    assert list((site / "__pycache__").glob("fake_harness.*.pyc"))
    assert json.loads((folder / "installed.json").read_text()) == {"pins": [PIN.spec], "bytecode": True}
    for compiled in (site / "__pycache__").iterdir():
        compiled.unlink()
    PipVenvInstaller((PIN,)).ensure("fake", tmp_path)  # marked: not compiled again
    assert not list((site / "__pycache__").iterdir())
