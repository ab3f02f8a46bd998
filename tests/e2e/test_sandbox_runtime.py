"""`openforge run --runtime sandbox`: the quickstart's rollouts run in sandboxes of their own
(namespaces, no host files or network; docs/executor.md) and record the same trajectories,
in shape, as the `process` runtime: the real proxy reaches the engine through its channel."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import needs_sandbox
from tests.e2e.test_podman_runtime import _config, _shape

from pipelines.executor import _pod_node
from pipelines.run import run_experiment


@pytest.mark.slow
@pytest.mark.timeout(600)  # ~190 s in CI on loaded cores
@needs_sandbox()
def test_sandbox_runtime_records_the_process_runtimes_trajectories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pods = []
    start = _pod_node.start_sandboxed_pod

    def spy(plan, *args):  # type: ignore[no-untyped-def]
        pod = start(plan, *args)
        pods.append(pod)
        return pod

    monkeypatch.setattr(_pod_node, "start_sandboxed_pod", spy)
    console = Console(file=io.StringIO(), width=160)
    by_process, by_sandbox = _config(tmp_path, "by-process"), _config(tmp_path, "by-sandbox")

    run_experiment(by_process, console=console, workdir=tmp_path / "process", runtime="process")
    assert pods == []
    run_experiment(by_sandbox, console=console, workdir=tmp_path / "sandbox", runtime="sandbox")

    # Every rollout, and nothing else, ran sandboxed, its proxy behind the engine channel.
    assert len(pods) == 4
    for pod in pods:
        assert [s.name for s in pod.helpers] == ["netns", "channel"]
        # Dies with the executor (setpriv), then enters the pod's network namespace.
        net = f"--net=/proc/{pod.helpers[0].process.pid}/ns/net"
        assert pod.main.process.args[:6] == ["setpriv", "--pdeathsig", "KILL", "--", "nsenter", net]
    sandbox_shape = _shape(by_sandbox)
    assert len(sandbox_shape) == 4
    assert all(r["status"] == "ok" and r["calls"] > 0 and r["logprobs_match_tokens"] for r in sandbox_shape.values())
    assert sandbox_shape == _shape(by_process)
