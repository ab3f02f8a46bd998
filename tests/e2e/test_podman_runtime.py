"""`openforge run --runtime podman`: the quickstart's rollouts run as real pods (`podman kube
play`: harness container plus proxy sidecar, from the compiled pod spec) and record the
same trajectories, in shape, as the `process` runtime.

Needs podman and the local image (`make podman-base`; `make test` builds it in the background
and this test waits for it); skips, saying which, only where podman cannot run a container."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests._background_installs import background_install_problem
from tests._missing import require

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from components.core.trajectory import RecordedCall
from pipelines.executor import PodmanOptions, podman_problem
from pipelines.executor._podman import POD_LABEL, PodmanPod
from pipelines.executor import _pod_node
from pipelines.run import run_experiment

QUICKSTART_TASKS = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "quickstart"


PODMAN_STATUS_ENV = "OPENFORGE_PODMAN_BASE_STATUS"


def podman_here_problem() -> str | None:
    """Why podman cannot run the local image here (the background build failed, podman is
    missing, or a container will not start), or None."""
    options = PodmanOptions()
    problem = background_install_problem(PODMAN_STATUS_ENV, "podman image build", "podman-base")
    problem = problem or podman_problem(options)
    if problem is None:
        probe = subprocess.run(
            [options.podman, "run", "--rm", "--network", "none", "--entrypoint", "python3", options.image, "-c", "pass"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if probe.returncode != 0:
            problem = f"podman cannot start a container here: {probe.stderr.strip()[-500:]}"
    return problem


@pytest.fixture(scope="module")
def podman_runs() -> None:
    require(podman_here_problem())


def _config(tmp_path: Path, name: str) -> ExperimentConfig:
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        for task_id in ("say-yes", "write-hello"):
            shutil.copytree(QUICKSTART_TASKS / task_id, tasks / task_id)
    return ExperimentConfig.model_validate(
        {
            "name": name,
            "iterations": 1,
            "tasks": {"source": str(tasks)},
            "harness": {"max_turns": 2, "max_tokens": 16},
            "rollout": {"samples_per_task": 2, "concurrency": 4, "time_limit_s": 60},
            "storage": {"uri": f"file://{tmp_path / 'store'}"},
            "tracking": {"uri": f"sqlite:///{tmp_path / name}.db"},
        }
    )


def _shape(config: ExperimentConfig) -> dict[str, Any]:
    """What must not depend on the runtime: rollouts, outcomes, calls and their recorded fields."""
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    plan = json.loads(store.get_bytes(layout.plan(0)))
    shape: dict[str, Any] = {}
    for rollout in plan["rollouts"]:
        rollout_id = rollout["rollout_id"]
        outcome = json.loads(store.get_bytes(layout.outcome(0, rollout_id)))
        lines = store.get_bytes(layout.trajectory(0, rollout_id)).splitlines()
        calls = [RecordedCall.model_validate_json(line) for line in lines]
        shape[rollout_id] = {
            "status": outcome["status"],
            "calls": outcome["num_calls"],
            "fields": sorted({key for line in lines for key in json.loads(line)}),
            "recorded": [
                (c.call_index, c.api, c.policy_version, c.ok, c.sampling.temperature, bool(c.completion_token_ids))
                for c in calls
            ],
            "logprobs_match_tokens": all(len(c.completion_logprobs) == len(c.completion_token_ids) for c in calls),
        }
    return shape


@pytest.mark.slow
def test_podman_runtime_runs_rollouts_as_pods_with_the_process_runtimes_trajectories(
    podman_runs: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pods: list[dict[str, Any]] = []
    started: list[PodmanPod] = []
    start = _pod_node.start_podman_pod

    def spy(plan, template, *args):  # type: ignore[no-untyped-def]
        pod = start(plan, template, *args)
        pods.append(json.loads((plan.sandbox / "pod.yaml").read_text()))
        started.append(pod)
        return pod

    monkeypatch.setattr(_pod_node, "start_podman_pod", spy)
    console = Console(file=io.StringIO(), width=160)
    by_process, by_podman = _config(tmp_path, "by-process"), _config(tmp_path, "by-podman")

    run_experiment(by_process, console=console, workdir=tmp_path / "process", runtime="process")
    assert pods == []
    run_experiment(by_podman, console=console, workdir=tmp_path / "podman", runtime="podman")

    # Every rollout, and nothing else, ran as a pod: harness container plus proxy sidecar,
    # off the host network (the proxy reaches the engine through its channel), as the user
    # the manifest names.
    assert len(pods) == 4
    for pod in pods:
        spec = pod["spec"]
        assert [c["name"] for c in spec["containers"]] == ["main", "proxy"]
        assert spec["hostNetwork"] is False and spec["securityContext"]["runAsUser"] == 1000
        assert [v["hostPath"]["type"] for v in spec["volumes"]].count("Socket") == 1
        assert spec["containers"][0]["command"][:3] == ["openforge", "step", "rollout"]
    # Each of this test's pods is gone (other runs on the machine may hold theirs); where one is
    # left, the runtime said why in its removal.log.
    listed = subprocess.run(
        ["podman", "pod", "ps", "--format", "{{.Name}}", "--filter", f"label={POD_LABEL}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    left = {pod.name: _removal_note(pod) for pod in started if pod.name in listed}
    assert not left, f"pods left after the run: {left}"

    process_shape, podman_shape = _shape(by_process), _shape(by_podman)
    assert len(podman_shape) == 4
    assert all(r["status"] == "ok" and r["calls"] > 0 and r["logprobs_match_tokens"] for r in podman_shape.values())
    assert podman_shape == process_shape


def _removal_note(pod: PodmanPod) -> str:
    note = pod.log_dir / "removal.log"
    return note.read_text().strip() if note.exists() else "no removal.log: the runtime did not notice"
