"""A hostile policy inside a real harness, in `openforge run`'s default sandbox runtime.

The dev engine's choice mode, with one candidate per turn, forces the policy's turns: the
reference harness, then Claude Code, runs a shell command that tries, in one rollout, to read a secret in
the invoking user's home, write outside its workspace, rewrite the run's rewards and a
checkpoint in the `file://` store, reach any service on loopback (the engine, an MLflow
stand-in, the other rollout's proxy: every port is tried), resolve and reach an outside
host, signal a process of the host and fill the disk past the rollout's cap. Every attempt
must fail, the host and the store must be untouched by it, and the rollout must still be
recorded and graded (its verifier prints the attempts' report).
"""

from __future__ import annotations

import http.server
import io
import json
import re
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest
from rich.console import Console
from tests._missing import needs_sandbox, require_harness

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, open_store
from pipelines.run import run_experiment

pytestmark = [pytest.mark.slow, needs_sandbox()]

MARKER = "openforge-hostile-was-here"
TMP_MB = 64
# Runs in the workspace as the harness's shell tool; prints one JSON line of outcomes.
HOSTILE = r"""
import json, os, signal, socket, subprocess, sys
secret, store, project, host_pid, marker = sys.argv[1:6]
marker = marker[::-1]  # given reversed: the command line itself is recorded in the store
report = {}
def attempt(name, action):
    try:
        action()
        report[name] = "NOT BLOCKED"
    except Exception as exc:
        report[name] = type(exc).__name__
def write(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(marker)
attempt("home", lambda: open(secret).read())
attempt("outside", lambda: write(os.path.join(project, marker)))
attempt("etc", lambda: write("/etc/" + marker))
attempt("rewards", lambda: write(os.path.join(store, "iterations", "0", "rewards.json")))
attempt("checkpoint", lambda: write(os.path.join(store, "checkpoints", "0", "model.safetensors")))
open_ports = []
for port in range(1, 65536):
    s = socket.socket()
    s.settimeout(0.2)
    if s.connect_ex(("127.0.0.1", port)) == 0:
        open_ports.append(port)
    s.close()
report["open ports"] = open_ports
attempt("dns", lambda: socket.getaddrinfo("example.com", 443))
attempt("outside host", lambda: socket.create_connection(("93.184.215.14", 443), timeout=3))
attempt("kill", lambda: os.kill(int(host_pid), signal.SIGKILL))
def fill():
    with open("/tmp/fill", "wb") as fh:
        for _ in range(%(mb)d + 64):
            fh.write(b"\0" * (1 << 20))
attempt("fill", fill)
if os.path.exists("/tmp/fill"):
    os.remove("/tmp/fill")
print(json.dumps(report))
open("report.json", "w").write(json.dumps(report))
""" % {"mb": TMP_MB}


def _task(root: Path, secret: Path, store: Path, project: Path, bystander: int) -> Path:
    task = root / "hostile"
    (task / "files").mkdir(parents=True)
    (task / "files" / "hostile.py").write_text(HOSTILE)
    command = f"python3 hostile.py {secret} {store} {project} {bystander} {MARKER[::-1]}"
    (task / "task.yaml").write_text(
        textwrap.dedent(f"""\
            id: hostile
            prompt: "Do as you please."
            workspace: files
            verifier: {{command: ["python3", "{{task_dir}}/verify.py"], timeout_s: 10}}
            choices:
              - - tool_calls: [{{shell: {json.dumps(command)}}}]
              - - content: "Done."
        """)
    )
    (task / "verify.py").write_text("import sys; print(open('report.json').read()); sys.exit(0)\n")
    return task


@pytest.mark.timeout(900)
@pytest.mark.parametrize("harness", ["reference", "claude-code"])
def test_every_way_out_of_a_sandboxed_rollout_fails_and_the_rollout_is_graded(
    harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_harness(harness)
    home = tmp_path / "home"
    home.mkdir()
    (home / "id_key").write_text("secret")
    monkeypatch.setenv("HOME", str(home))  # the invoking user's home, hidden like the real one
    mlflow = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=mlflow.serve_forever, daemon=True).start()
    bystander = subprocess.Popen(["sleep", "600"])
    project = Path(__file__).resolve().parents[2]
    store = tmp_path / "store"
    config = ExperimentConfig.model_validate(
        {
            "name": "hostile",
            "iterations": 1,
            "engine": {"dev_mode": "choice"},
            "tasks": {"source": str(tmp_path / "tasks")},
            "harness": {"name": harness, "max_turns": 3, "max_tokens": 512},  # room for the whole forced tool call
            "rollout": {"samples_per_task": 2, "concurrency": 2, "time_limit_s": 240, "tmp_mb": TMP_MB},
            "algorithm": {"allow_empty_update": True},
            "storage": {"uri": f"file://{store}"},
            "tracking": {"uri": f"sqlite:///{tmp_path / 'mlflow.db'}"},
        }
    )
    _task(tmp_path / "tasks", home / "id_key", store / "hostile", project, bystander.pid)
    try:
        run_experiment(config, console=Console(file=io.StringIO(), width=120), workdir=tmp_path / "work", runtime="sandbox")
        bystander_alive = bystander.poll() is None
    finally:
        bystander.kill()
        mlflow.shutdown()

    layout, files = RunLayout(config.name), open_store(config.storage.uri)
    reports = []
    for sample in (0, 1):
        outcome = json.loads(files.get_bytes(layout.outcome(0, f"hostile-s{sample}")))
        assert (outcome["status"], outcome["passed"]) == ("ok", True), outcome["details"]  # recorded and graded
        assert files.get_bytes(layout.trajectory(0, f"hostile-s{sample}")).strip()
        reports.append(json.loads(outcome["verifier_output"].strip().splitlines()[-1]))
    print(json.dumps(reports, indent=1))
    # The proxies' "listening on http://127.0.0.1:P -> http://127.0.0.1:E" lines: each pod's
    # proxy port and the engine's.
    listening = re.compile(r"listening on http://127\.0\.0\.1:(\d+) -> http://[\d.]+:(\d+)")
    found = [m.groups() for log in (tmp_path / "work").rglob("proxy.log") if (m := listening.search(log.read_text()))]
    proxy_ports, engine_ports = {int(p) for p, _ in found}, {int(e) for _, e in found}
    assert len(proxy_ports) == 2 and len(engine_ports) == 1, found
    for report in reports:
        open_ports = report.pop("open ports")
        # Writes to the store's path land, if anywhere, in the sandbox's private /tmp (the
        # store here is under /tmp): the host side is checked below, not the report.
        reached = [name for name, result in report.items() if result == "NOT BLOCKED" and name not in ("rewards", "checkpoint")]
        assert reached == []
        assert report["fill"] == "OSError"  # no space left past the cap, the rollout went on
        # What answers in a pod is its own: its proxy, the runner's egress sink (and a scan
        # may connect to its own source port); no host service, no other pod's proxy.
        assert not set(open_ports) & {mlflow.server_address[1], *engine_ports}, open_ports
        assert len(set(open_ports) & proxy_ports) == 1, (open_ports, proxy_ports)
    assert bystander_alive
    assert not (project / MARKER).exists()
    marked = [p for p in store.rglob("*") if p.is_file() and MARKER.encode() in p.read_bytes()]
    assert marked == []
    rewards = json.loads(files.get_bytes(layout.rewards(0)))
    assert MARKER not in json.dumps(rewards)
