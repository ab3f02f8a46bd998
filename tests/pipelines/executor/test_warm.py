"""Warm starts: containers forked from a server behave as freshly started processes do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from components.core.services import openforge_argv
from pipelines.executor._processes import ProcessRegistry
from pipelines.executor._sandbox import ContainerRun
from pipelines.executor._warm import WarmStarts
from pipelines.warm_start import OPENFORGE_ENTRY

PROBE = "tests.pipelines.executor.warm_probe:main"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def warm() -> WarmStarts:
    with WarmStarts(modules=("json",), entry=PROBE) as server:
        assert server.wait_ready(60), "the warm-start server never became ready"
        yield server


def _run(warm: WarmStarts, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    log = tmp_path / "container.log"
    process = warm.spawn(openforge_argv(*args), tmp_path, env or {}, log)
    return process.wait(30), log.read_text()


def test_a_warm_container_gets_its_own_cwd_env_session_log_and_stdin(warm: WarmStarts, tmp_path: Path) -> None:
    os.environ["WARM_PROBE_SERVER_ONLY"] = "x"  # set after the server started: never reaches it either
    code, out = _run(warm, tmp_path, "report", "--flag", env={"WARM_PROBE": "container"})

    seen = json.loads(out)
    assert code == 0
    assert seen == {
        "args": ["report", "--flag"], "cwd": str(tmp_path), "env": "container", "leaked": None,
        "pgid_is_pid": True, "stdin": "/dev/null", "argv0": "openforge",
    }  # fmt: skip


def test_exit_codes_and_crashes_come_back_as_a_fresh_process_would_report_them(warm: WarmStarts, tmp_path: Path) -> None:
    assert _run(warm, tmp_path, "exit", "3")[0] == 3
    code, out = _run(warm, tmp_path, "raise")
    assert code == 1
    assert "RuntimeError: the probe failed on purpose" in out


def test_stopping_a_warm_container_kills_its_group_and_reports_the_signal(warm: WarmStarts, tmp_path: Path) -> None:
    registry = ProcessRegistry(stop_timeout_s=5, warm=warm)
    run = ContainerRun(name="main", argv=openforge_argv("sleep", "60"), cwd=tmp_path, env={})
    service = registry.start(run, tmp_path / "main.log")

    assert service.process.poll() is None
    registry.stop_all()
    assert service.process.returncode == -15
    with pytest.raises(ProcessLookupError):
        os.kill(service.process.pid, 0)


def test_commands_that_are_not_openforge_start_cold(warm: WarmStarts, tmp_path: Path) -> None:
    registry = ProcessRegistry(stop_timeout_s=5, warm=warm)
    run = ContainerRun(name="main", argv=[sys.executable, "-c", "print('cold')"], cwd=tmp_path, env={})
    service = registry.start(run, tmp_path / "main.log")

    assert isinstance(service.process, subprocess.Popen)
    assert service.process.wait(30) == 0
    registry.stop_all()
    assert (tmp_path / "main.log").read_text() == "cold\n"


def test_a_killed_run_takes_its_warm_containers_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from components.core.services import openforge_argv
        from pipelines.executor._warm import WarmStarts
        warm = WarmStarts(modules=(), entry={PROBE!r})
        assert warm.wait_ready(60)
        process = warm.spawn(openforge_argv("sleep", "120"), Path({str(tmp_path)!r}), {{}}, Path({str(tmp_path / 'log')!r}))
        Path({str(pid_file)!r}).write_text(str(process.pid))
        os._exit(0)  # as if SIGKILLed: no clean-up runs
    """)
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, timeout=120)
    child = int(pid_file.read_text())

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, 9)
    pytest.fail("the warm-started container outlived the run that started it")


def test_the_real_openforge_cli_runs_warm(tmp_path: Path) -> None:
    with WarmStarts(modules=("pipelines.cli",), entry=OPENFORGE_ENTRY) as server:
        assert server.wait_ready(60)
        assert server.accepts(openforge_argv("--help"))
        code, out = _run(server, tmp_path, "step", "score", "--no-such-option")

    assert code == 2
    assert "No such option: --no-such-option" in out


def test_a_module_that_cannot_be_imported_is_skipped_and_logged(tmp_path: Path) -> None:
    log = tmp_path / "warm-start.log"
    with WarmStarts(modules=("json", "no_such_module_here"), entry=PROBE, log_path=log) as server:
        assert server.wait_ready(60), "one missing module must not keep the server from serving"
        code, _ = _run(server, tmp_path, "exit", "0")

    assert code == 0
    assert "skipping no_such_module_here: ModuleNotFoundError" in log.read_text()
