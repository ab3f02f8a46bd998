"""A second local workflow of one experiment is refused while the first runs, and a killed
one leaves nothing that refuses its rerun."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.core.storage import open_store
from pipelines.run import RunError, executor_folder
from pipelines.workflow_lock import WorkflowBusy, workflow_lock
from tests.pipelines.test_run import _config, _run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def other_process_holds() -> Iterator:
    """Start another interpreter holding ``workflow_lock(folder, workflow)`` until killed."""
    held: list[subprocess.Popen] = []

    def hold(folder: Path, workflow: str) -> subprocess.Popen:
        code = (
            "import sys, time\nfrom pathlib import Path\nfrom pipelines.workflow_lock import workflow_lock\n"
            f"with workflow_lock(Path({str(folder)!r}), {workflow!r}):\n    print('held', flush=True)\n    time.sleep(600)\n"
        )
        process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
        held.append(process)
        assert process.stdout.readline().strip() == "held"
        return process

    yield hold
    for process in held:
        process.kill()
        process.wait()


def test_a_second_holder_is_told_who_holds_it_and_a_killed_holder_frees_it(tmp_path: Path, other_process_holds) -> None:
    folder = tmp_path / "executor" / "exp"
    holder = other_process_holds(folder, "run")

    with pytest.raises(WorkflowBusy, match=rf"run of this experiment is already running .*pid {holder.pid}"):
        with workflow_lock(folder, "run"):
            pass
    with workflow_lock(folder, "eval-teacher"):  # another kind of workflow of the experiment may run beside it
        pass

    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with workflow_lock(folder, "run") as path:
        assert path.read_text().startswith(f"pid {__import__('os').getpid()},")


def test_run_experiment_refuses_to_start_beside_a_running_run_of_its_experiment(
    tmp_path: Path, tracking_uri: str, other_process_holds
) -> None:
    config = _config(tmp_path, {"uri": f"file://{tmp_path / 'store'}"}, tracking_uri, "busy")
    other_process_holds(executor_folder(tmp_path / ".openforge", config), "run")
    started = time.monotonic()

    with pytest.raises(RunError, match="already running") as refused:
        _run(config, tmp_path)

    assert "wait for it to end or stop it" in str(refused.value)
    assert open_store(config.storage.uri).list("busy") == []  # refused before any step ran
    assert time.monotonic() - started < 30
