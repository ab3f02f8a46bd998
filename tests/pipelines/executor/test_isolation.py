"""The sandbox runtime: a hostile rollout pod tries every way out and none works.

The pod's main container plays a model that ran hostile commands: it reads a secret in a
hidden home, writes outside its workspace, rewrites the run's store, connects to the
engine's and MLflow's ports on loopback, resolves an outside host, signals a process of the
host and reads the invoking user's environment. Its proxy sidecar meanwhile reaches the
engine through the one channel the runtime gives it. The report it writes is the pod's
output artifact; the host and the store must be unchanged afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests._missing import needs_sandbox

from components.core.storage import open_store
from pipelines.executor import ExecutorOptions, SandboxOptions, execute_workflow
from pipelines.executor._channel import CHANNEL_PATH
from tests.pipelines.executor.manifests import dag, inputs, pod, task, workflow

pytestmark = needs_sandbox()

# Each attempt prints what happened; "blocked" is the only good answer.
HOSTILE = r"""
import json, os, signal, socket, sys, time, urllib.request
secret, store_file, engine_port, mlflow_port, host_pid, project = sys.argv[1:7]
report = {}
def attempt(name, action):
    try:
        report[name] = f"NOT BLOCKED: {action()!r}"[:200]
    except Exception as exc:
        report[name] = f"blocked: {type(exc).__name__}"
attempt("read a secret in the hidden home", lambda: open(secret).read())
attempt("write in the project", lambda: open(os.path.join(project, "pwned"), "w").write("x"))
attempt("write in /etc", lambda: open("/etc/pwned", "w").write("x"))
attempt("rewrite the store's rewards", lambda: open(store_file, "w").write('{"reward": 1}'))
attempt("read /etc/shadow", lambda: open("/etc/shadow").read())
attempt("connect to the engine", lambda: socket.create_connection(("127.0.0.1", int(engine_port)), timeout=2))
attempt("connect to MLflow", lambda: socket.create_connection(("127.0.0.1", int(mlflow_port)), timeout=2))
attempt("use the proxy's channel", lambda: socket.socket(socket.AF_UNIX).connect(%(channel)r))
started = time.monotonic()
attempt("resolve an outside host", lambda: socket.getaddrinfo("example.com", 443))
report["dns seconds"] = round(time.monotonic() - started, 2)
attempt("signal a host process", lambda: os.kill(int(host_pid), signal.SIGTERM))
attempt("read the host's secret variable", lambda: os.environ["AWS_SECRET_ACCESS_KEY"])
for _ in range(200):  # the sidecar may still be starting
    try:
        report["through the proxy"] = urllib.request.urlopen("http://127.0.0.1:8100/v1/models", timeout=20).read().decode()
        break
    except OSError as exc:
        report["through the proxy"] = repr(exc)
        time.sleep(0.05)
os.makedirs("/work/out", exist_ok=True)
json.dump(report, open("/work/out/report.json", "w"), indent=1)
""" % {"channel": CHANNEL_PATH}

# The proxy stand-in: answers on 8100 with what the engine says, fetched over its channel.
PROXY = r"""
import http.client, http.server, os, socket, sys
class UnixConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(os.environ["OPENFORGE_UPSTREAM_SOCKET"])
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        upstream = UnixConnection("engine")
        upstream.request("GET", self.path)
        body = upstream.getresponse().read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), Handler).serve_forever()
"""


def _hostile_pod(engine_port: int) -> list[dict]:
    rollout = pod(
        "rollout",
        HOSTILE,
        "{{inputs.parameters.secret}}", "{{inputs.parameters.store-file}}", str(engine_port),
        "{{inputs.parameters.mlflow-port}}", "{{inputs.parameters.host-pid}}", "{{inputs.parameters.project}}",
        inputs=inputs("secret", "store-file", "mlflow-port", "host-pid", "project", "upstream"),
        container={"volumeMounts": [{"name": "work", "mountPath": "/work"}]},
        sidecars=[{
            "name": "proxy", "image": "python:3.12", "command": [sys.executable, "-c", PROXY],
            # As in the compiled manifest, the engine's address is a parameter (data, not a pod port).
            "args": ["--upstream", "http://{{inputs.parameters.upstream}}", "--port", "8100"],
        }],
        volumes=[{"name": "work", "emptyDir": {}}],
        outputs={"artifacts": [{"name": "report", "path": "/work/out/report.json", "s3": {"key": "report.json"}}]},
    )  # fmt: skip
    names = ("secret", "store-file", "mlflow-port", "host-pid", "project", "upstream")
    main = dag("main", task("rollout", "rollout", params={n: f"{{{{workflow.parameters.{n}}}}}" for n in names}))
    return workflow(main, rollout, parameters=dict.fromkeys(names, ""))


def test_a_hostile_pod_reaches_nothing_but_its_proxys_channel(
    tmp_path: Path, host_ports: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine_port, mlflow_port = host_ports
    home = tmp_path / "home"
    home.mkdir()
    (home / "key").write_text("secret")
    store = open_store(f"file://{tmp_path / 'store'}")
    store.put_bytes("run/rewards.json", b'{"reward": 0}')
    before = {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()}
    project = tmp_path / "project"
    project.mkdir()
    bystander = subprocess.Popen(["sleep", "60"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-secret")
    options = SandboxOptions(hidden=(home, tmp_path / "store"))
    try:
        execute_workflow(
            _hostile_pod(engine_port),
            parameters={
                "secret": str(home / "key"),
                "store-file": str(tmp_path / "store" / "run" / "rewards.json"),
                "mlflow-port": str(mlflow_port),
                "host-pid": str(bystander.pid),
                "project": str(project),
                "upstream": f"127.0.0.1:{engine_port}",
            },
            store=store,
            workdir=tmp_path / "exec",
            options=ExecutorOptions(cwd=project, stop_timeout_s=5, sandbox=options),
            observer=lambda event: None,
        )
        alive = bystander.poll() is None
    finally:
        bystander.kill()

    report = json.loads(store.get_bytes("report.json"))
    print(json.dumps(report, indent=1))
    through_proxy = report.pop("through the proxy")
    dns_seconds = report.pop("dns seconds")
    if os.geteuid() != 0:
        report.pop("read /etc/shadow")  # not readable by an ordinary user anyway
    assert {name: outcome for name, outcome in report.items() if not outcome.startswith("blocked")} == {}
    assert through_proxy == f"{engine_port}:/v1/models"  # the channel reaches the engine, and only the proxy has it
    assert dns_seconds < 5  # no resolver to wait for: it fails at once
    assert alive
    assert {p: p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file() and p.name != "report.json"} == before
    assert list(project.iterdir()) == []


def test_the_quickstart_layout_keeps_the_checkout_readable_and_its_run_folders_hidden(tmp_path: Path) -> None:
    """What a sandboxed container sees of this checkout: code and harnesses, not the runs."""
    root = Path(__file__).resolve().parents[3]
    (tmp_path / "pod").mkdir()
    mounts = SandboxOptions(readable=(root / ".openforge" / "harnesses",)).mounts(tmp_path / "pod")
    probe = f"import os; print(sorted(os.listdir({str(root / '.openforge')!r})), os.path.exists({str(root / 'pyproject.toml')!r}))"
    result = subprocess.run(
        ["unshare", "--net", "--", "bwrap", *mounts, "--dev", "/dev", "--proc", "/proc", "--", sys.executable, "-c", probe]
        if os.geteuid() == 0
        else ["bwrap", "--unshare-user", "--unshare-net", *mounts, "--dev", "/dev", "--proc", "/proc", "--", sys.executable, "-c", probe],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    seen, has_code = result.stdout.split("] ")
    assert has_code.strip() == "True"
    assert "runs" not in seen and "executor" not in seen and "mlflow.db" not in seen


# `openforge run` killed with SIGKILL: the executor runs this, a sandboxed pod holding its
# network namespace and its proxy's channel, and dies without a word.
_KILLED_RUN = r"""
import json, sys
from pathlib import Path
from components.core.storage import open_store
from pipelines.executor import ExecutorOptions, SandboxOptions, execute_workflow
manifests, work = json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2])
execute_workflow(manifests, parameters={}, store=open_store(f"file://{work / 'store'}"), workdir=work / "exec",
                 options=ExecutorOptions(stop_timeout_s=5, sandbox=SandboxOptions()), observer=lambda event: None)
"""


def _descendants(pid: int) -> dict[int, str]:
    """Every living process under ``pid``, with its command line."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_killed_executor_leaves_no_process_of_its_sandboxed_pods(tmp_path: Path) -> None:
    rollout = pod(
        "rollout", "import time; time.sleep(300)",
        sidecars=[{"name": "proxy", "image": "python:3.12", "command": [sys.executable, "-c", PROXY],
                   "args": ["--upstream", "http://127.0.0.1:9", "--port", "8100"]}],
    )  # fmt: skip
    manifests = tmp_path / "manifests.json"
    manifests.write_text(json.dumps(workflow(dag("main", task("rollout", "rollout")), rollout)))
    root = Path(__file__).resolve().parents[3]
    run = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(manifests), str(tmp_path)], env={**os.environ, "PYTHONPATH": str(root)})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            pods = _descendants(run.pid)
            if any("pipelines.executor._channel" in c for c in pods.values()) and any("time.sleep(300)" in c for c in pods.values()):
                break
            time.sleep(0.2)
        assert run.poll() is None, f"the run ended before its pod started (exit {run.returncode})"
        pods = _descendants(run.pid)
        assert any("signal.pause()" in c for c in pods.values()), pods  # the network namespace's holder
    finally:
        run.kill()
        run.wait()

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pods):
        time.sleep(0.1)
    left = {p: c for p, c in pods.items() if _alive(p)}
    for p in left:
        os.kill(p, 9)
    assert left == {}, "left running after the executor was killed:\n" + "\n".join(c[:100].replace("\n", " ") for c in left.values())
