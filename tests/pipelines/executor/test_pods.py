"""Daemon steps, sidecars, path and port mapping, and stopping every process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from components.core.services import free_port
from components.core.storage import open_store
from pipelines.executor import ExecutorOptions, NodeEvent, NodePhase, WorkflowFailed, execute_workflow
from pipelines.executor import _sandbox
from tests.pipelines.executor.manifests import APPEND, FETCH, SERVER, dag, inputs, pod, task, workflow


def _run(manifests, tmp_path: Path, events: list[NodeEvent] | None = None, **parameters: str):
    store = open_store(f"file://{tmp_path / 'store'}")
    execute_workflow(
        manifests,
        parameters=parameters,
        store=store,
        workdir=tmp_path / "exec",
        options=ExecutorOptions(cwd=tmp_path, ready_timeout_s=30, stop_timeout_s=5),
        observer=(events.append if events is not None else lambda e: None),
    )
    return store


def _gone(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _serve_then_fetch(fetch_code: str = FETCH) -> list[dict]:
    serve = pod(
        "serve",
        SERVER,
        "--host", "0.0.0.0", "--port", "8000", "{{workflow.parameters.out}}/serve.pid",
        daemon=True,
        container={"ports": [{"containerPort": 8000}], "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}},
    )  # fmt: skip
    fetch = pod("fetch", fetch_code, "{{inputs.parameters.url}}/v1/models", "{{workflow.parameters.out}}/answer", inputs=inputs("url"))
    main = dag(
        "main",
        task("serve", "serve"),
        task("fetch", "fetch", depends="serve", params={"url": "http://{{tasks.serve.ip}}:8000"}),
    )
    return workflow(main, serve, fetch, parameters={"out": ""})


def test_daemon_is_ready_before_dependents_and_stopped_at_the_end(tmp_path: Path) -> None:
    events: list[NodeEvent] = []
    _run(_serve_then_fetch(), tmp_path, events, out=str(tmp_path))
    assert (tmp_path / "answer").read_text() == "pong:/v1/models"
    order = [(e.node, e.phase) for e in events]
    assert order.index(("serve", NodePhase.DAEMONED)) < order.index(("fetch", NodePhase.RUNNING))
    assert order.index(("fetch", NodePhase.SUCCEEDED)) < order.index(("serve", NodePhase.SUCCEEDED))
    assert _gone(tmp_path / "serve.pid")


def test_daemon_is_stopped_when_a_dependent_fails(tmp_path: Path) -> None:
    with pytest.raises(WorkflowFailed, match="fetch: exit code 7"):
        _run(_serve_then_fetch("import sys; sys.exit(7)"), tmp_path, out=str(tmp_path))
    assert _gone(tmp_path / "serve.pid")


def test_daemon_that_never_gets_ready_fails_the_run(tmp_path: Path) -> None:
    manifests = _serve_then_fetch()
    serve = manifests[0]["spec"]["templates"][1]
    serve["container"]["command"][-1] = "import sys; sys.exit('engine crashed')"
    with pytest.raises(WorkflowFailed, match="(?s)readiness probe failed.*engine crashed"):
        _run(manifests, tmp_path, out=str(tmp_path))


def test_a_ready_daemon_still_counts_against_its_dags_parallelism(tmp_path: Path) -> None:
    # As in Argo, a daemoned pod is a running pod: with parallelism 2, the server and one
    # child run at a time.
    manifests = _serve_then_fetch(FETCH + "\nimport time; time.sleep(0.5)")
    main = manifests[0]["spec"]["templates"][0]
    main["parallelism"] = 2
    main["dag"]["tasks"][1]["withItems"] = [1, 2, 3]
    events: list[NodeEvent] = []
    _run(manifests, tmp_path, events, out=str(tmp_path))
    running = peak = 0
    for event in events:
        if event.node.startswith("fetch("):
            running += {NodePhase.RUNNING: 1, NodePhase.SUCCEEDED: -1}.get(event.phase, 0)
            peak = max(peak, running)
    assert peak == 1


def _rollout_with_sidecar() -> list[dict]:
    # The main container calls the sidecar on 127.0.0.1:8100 (the pod's loopback) and
    # reads what the sidecar wrote into the shared emptyDir, mounted at different paths.
    main_code = FETCH + "\nimport shutil; shutil.copy(sys.argv[4], sys.argv[3])"
    rollout = pod(
        "rollout",
        main_code,
        "http://127.0.0.1:8100/s/{{inputs.parameters.id}}/v1",
        "/work/out/body.txt",
        "/work/out/calls.txt",
        "/work/calls.txt",
        inputs=inputs("id"),
        container={"volumeMounts": [{"name": "shared", "mountPath": "/work"}]},
        sidecars=[
            {
                "name": "proxy",
                "image": "python:3.12",
                "command": [sys.executable, "-c", SERVER],
                "args": ["--port", "8100", "{{workflow.parameters.out}}/proxy.pid"],
                "env": [{"name": "CALLS", "value": "/data/calls.txt"}],
                "volumeMounts": [{"name": "shared", "mountPath": "/data"}],
            }
        ],
        volumes=[{"name": "shared", "emptyDir": {}}],
        outputs={
            "artifacts": [
                {"name": "body", "path": "/work/out/body.txt", "s3": {"key": "out/{{inputs.parameters.id}}/body.txt"}},
                {"name": "calls", "path": "/work/out/calls.txt", "s3": {"key": "out/{{inputs.parameters.id}}/calls.txt"}},
            ]
        },
    )
    main = dag("main", task("rollout", "rollout", withItems=["r0", "r1"], params={"id": "{{item}}"}))
    return workflow(main, rollout, parameters={"out": ""})


def test_sidecar_shares_the_pod_volume_and_loopback_and_stops_after_main(tmp_path: Path) -> None:
    store = _run(_rollout_with_sidecar(), tmp_path, out=str(tmp_path))
    for rid in ("r0", "r1"):
        assert store.get_bytes(f"out/{rid}/body.txt") == f"pong:/s/{rid}/v1".encode()
        assert store.get_bytes(f"out/{rid}/calls.txt") == f"/s/{rid}/v1\n".encode()
    assert _gone(tmp_path / "proxy.pid")


def test_pods_running_at_once_never_share_a_loopback_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The OS may hand the same free port to two pods planned at once (it was free when
    # asked); forced here by offering every port twice. Sharing one, r1's main would
    # reach r0's sidecar, which records r1's call in r0's pod: r1's calls.txt is empty.
    offered = iter(port for port in (free_port() for _ in range(64)) for _ in range(2))
    monkeypatch.setattr(_sandbox, "free_port", lambda: next(offered))

    store = _run(_rollout_with_sidecar(), tmp_path, out=str(tmp_path))

    for rid in ("r0", "r1"):
        assert store.get_bytes(f"out/{rid}/calls.txt") == f"/s/{rid}/v1\n".encode()


def test_parameter_values_are_never_rewritten_but_manifest_paths_are(tmp_path: Path) -> None:
    # `/work` is a mount path: written in the manifest it maps into the sandbox; arriving
    # as a parameter value (data, e.g. a config's storage path) it must stay as it is.
    log = tmp_path / "log"
    manifests = workflow(
        pod(
            "solo",
            "import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]))",
            str(log),
            "{{workflow.parameters.value}}",
            "/work/x",
            "127.0.0.1:8000",
            container={"volumeMounts": [{"name": "v", "mountPath": "/work"}], "ports": [{"containerPort": 8000}]},
            volumes=[{"name": "v", "emptyDir": {}}],
        ),
        parameters={"value": "/work/main 127.0.0.1:8000"},
    )
    _run(manifests, tmp_path)
    given, mapped, address = log.read_text().rsplit(" ", 2)
    assert given == "/work/main 127.0.0.1:8000"
    assert mapped.startswith(str(tmp_path / "exec" / "pods")) and mapped.endswith("/volumes/v/x")
    assert address.startswith("127.0.0.1:") and address != "127.0.0.1:8000"


def test_sigterm_stops_every_process_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "serve.pid"
    serve = pod(
        "serve", SERVER, "--port", "8000", str(pid_file), daemon=True,
        container={"readinessProbe": {"httpGet": {"path": "/", "port": 8000}}},
    )  # fmt: skip
    hang = pod("hang", "import time; time.sleep(60)")
    manifests = workflow(dag("main", task("serve", "serve"), task("hang", "hang", depends="serve")), serve, hang)
    (tmp_path / "manifests.json").write_text(json.dumps(manifests))
    script = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from components.core.storage import open_store
        from pipelines.executor import ExecutorOptions, execute_workflow
        execute_workflow(json.loads(Path("manifests.json").read_text()), parameters={{}},
                         store=open_store("file://store"), workdir=Path("exec"),
                         options=ExecutorOptions(stop_timeout_s=5))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    run = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not (tmp_path / "exec" / "logs" / "hang" / "main.log").exists():
        assert run.poll() is None and time.monotonic() < deadline, "the hang step never started"
        time.sleep(0.05)
    hang_pids = [p.pid for p in psutil.Process(run.pid).children(recursive=True)]
    run.send_signal(signal.SIGTERM)
    assert run.wait(30) != 0
    assert _gone(pid_file)
    assert not [pid for pid in hang_pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def test_fail_fast_leaves_no_process_behind(tmp_path: Path) -> None:
    log = tmp_path / "log"
    manifests = workflow(
        dag("main", task("bad", "bad"), task("slow", "slow")),
        pod("bad", "import sys; sys.exit(1)"),
        pod("slow", APPEND + "; import time; time.sleep(0.5)", str(log), "slow-ran"),
    )
    with pytest.raises(WorkflowFailed):
        _run(manifests, tmp_path)
    # The already running sibling finished (fail-fast stops new tasks, not running ones).
    assert log.read_text() == "slow-ran\n"
