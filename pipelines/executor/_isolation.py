"""The ``sandbox`` runtime: a rollout pod whose containers cannot touch the host.

A rollout runs model-written commands. As processes on the host they could read the
user's files, rewrite the store (rewards, checkpoints) and reach every loopback service.
Here each pod gets what an Argo pod gets, from the kernel (docs/executor.md, "The sandbox
runtime"):

- **Network**: one network namespace per pod, holding only loopback (a holder process
  keeps it alive), shared by the pod's containers as in Kubernetes. Nothing leaves it:
  no route, no DNS. The proxy sidecar alone reaches the engine, through a Unix socket
  bound into its file system only, forwarded outside to the one upstream address its
  command line names (``_channel.py``).
- **Files** (bubblewrap): the system read-only; the host's homes, ``/tmp``, ``/run``, the
  store and the executor's folders (other pods, logs) hidden under empty tmpfs; this
  checkout, its interpreter and the harness installs read-only; the pod's own folder
  the only writable place besides a private ``/tmp``.
- **Processes**: a PID namespace per container (nothing outside can be signalled), IPC
  and UTS namespaces, a fresh ``/proc`` and a minimal ``/dev``.
- **Identity**: the invoking user's environment is not passed in (only the manifest's
  variables, ``PATH``, the locale and ``OPENFORGE_*``); under root the containers run
  as ``nobody`` with no capabilities and ``no_new_privs``, so file permissions hold too.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from components.core.services import Service, ServiceError
from components.proxy.cli import UPSTREAM_SOCKET_ENV
from pipelines.executor._channel import CHANNEL_CONTAINER, channel_env, channel_path, channel_sockets, channel_targets, forwarder_argv
from pipelines.executor._processes import ProcessRegistry, RunningPod
from pipelines.executor._sandbox import ContainerRun, PodPlan

SANDBOX_UID = 65534  # nobody: what the containers run as when the executor runs as root
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_KEPT_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM")
_KEPT_PREFIXES = ("LC_", "OPENFORGE_")
_NET_UP = "net-up"
_START_TIMEOUT_S = 10.0
_POLL_S = 0.02
# The holder of a pod's network namespace: brings loopback up (a new namespace's is down;
# SIOCGIFFLAGS/SIOCSIFFLAGS, so no `ip` is needed), says so, then sleeps until stopped.
_HOLDER = f"""
import fcntl, signal, socket, struct
s = socket.socket()
flags = struct.unpack('16sH', fcntl.ioctl(s, 0x8913, struct.pack('16sH', b'lo', 0))[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack('16sH', b'lo', flags | 1))
print({_NET_UP!r}, flush=True)
signal.pause()
"""
# Each helper of a sandboxed pod, and each container's outermost process (nsenter, then
# unshare, whose --kill-child and bwrap's --die-with-parent take the rest down), dies with the
# executor: without it a SIGKILLed run left every pod running, model-written commands
# included. The kernel sends it when the thread that started the process ends, and that
# thread waits for the pod and stops it (_pod_node._attempt), so it outlives the pod.
_DIE_WITH_EXECUTOR = ["setpriv", "--pdeathsig", "KILL", "--"]
_SHARED_TMP = ("/tmp", "/var/tmp")
_DEFAULT_HIDDEN = ("/root", "/home", "/run", "/mnt", "/media", "/srv", *_SHARED_TMP)


@dataclass(frozen=True)
class SandboxOptions:
    """Which pods run sandboxed, and what their containers may see."""

    templates: frozenset[str] = field(default_factory=lambda: frozenset({"rollout"}))
    """Names of the container templates that run sandboxed (those that run model-written commands)."""
    hidden: tuple[Path, ...] = ()
    """Folders no sandboxed container sees (each covered by an empty tmpfs), besides the defaults."""
    readable: tuple[Path, ...] = ()
    """Folders shown read-only again inside hidden ones (harness installs), besides this checkout and its Python."""
    channel_container: str = CHANNEL_CONTAINER
    """The one container that reaches its ``--upstream`` (the engine), through a Unix socket."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables every sandboxed container gets besides its manifest's (where the harnesses are)."""
    tmp_mb: int = 2048
    """Size of each container's private ``/tmp`` and ``/var/tmp`` (memory-backed): a flood of writes ends in ENOSPC."""

    def runs(self, template: Mapping[str, Any]) -> bool:
        return template.get("name") in self.templates and not template.get("daemon")

    def start_dir(self, cwd: Path, pod_dir: Path) -> Path:
        """Where a container starts: its own folder if this checkout shows it, else the pod's."""
        cwd = cwd.absolute()
        inside = [h for h in self._hidden() if h.is_relative_to(_PROJECT_ROOT)]
        if cwd.is_relative_to(_PROJECT_ROOT) and not any(cwd.is_relative_to(h) for h in inside):
            return cwd
        return pod_dir.absolute()

    def mounts(self, pod_dir: Path) -> list[str]:
        """bubblewrap's file-system arguments: hidden folders, then what shows through, then the pod."""
        hidden = self._hidden()
        layers = [(p, "--tmpfs") for p in hidden if p.is_dir()] + [(p, "--ro-bind") for p in self._readable() if p.exists()]
        # Parents before children, so a hidden folder inside a readable one stays hidden.
        args = ["--ro-bind", "/", "/"]
        for path, kind in sorted(layers, key=lambda layer: (len(layer[0].parts), layer[1] == "--ro-bind")):
            if kind == "--ro-bind":
                args += [*_mount_point(path, hidden), kind, str(path), str(path)]
            else:  # an empty folder in its place; the temporary ones writable by all, as on any host
                shared = ["--perms", "1777", "--size", str(self.tmp_mb << 20)] if str(path) in _SHARED_TMP else []
                args += [*shared, kind, str(path)]
        pod = pod_dir.absolute()
        return [*args, *_mount_point(pod, hidden), "--bind", str(pod), str(pod)]

    def _hidden(self) -> set[Path]:
        defaults = {Path(p) for p in _DEFAULT_HIDDEN} | {Path.home(), _PROJECT_ROOT / ".openforge"}
        return defaults | {p.absolute() for p in self.hidden}

    def _readable(self) -> set[Path]:
        return {_PROJECT_ROOT, Path(sys.prefix), Path(sys.base_prefix).resolve(), *(p.absolute() for p in self.readable)}


def _mount_point(path: Path, hidden: set[Path]) -> list[str]:
    """Folders leading to ``path`` inside a hidden one, made traversable: bubblewrap would
    create them 0700, which the sandbox user (not root) could not pass."""
    args: list[str] = []
    for parent in reversed(path.parents):
        if any(parent != h and parent.is_relative_to(h) for h in hidden):
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


@functools.cache
def sandbox_problem() -> str | None:
    """Why pods cannot be sandboxed here, with the fix; None when they can (probed once per process)."""
    if not sys.platform.startswith("linux"):
        return "the sandbox runtime needs Linux namespaces; use --runtime podman or --runtime process"
    missing = [tool for tool in ("bwrap", "unshare", "nsenter", "setpriv") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not found: install bubblewrap and util-linux (make sandbox-packages)"
    if subprocess.run([*_DIE_WITH_EXECUTOR, "true"], capture_output=True, check=False).returncode != 0:
        return "setpriv has no --pdeathsig here: install util-linux 2.33 or newer (make sandbox-packages)"
    probe = ["unshare", "--net", "--", "bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--dev", "/dev", "--", "true"]
    if os.geteuid() != 0:
        probe = ["unshare", "--user", "--map-root-user", "--net", "--", *probe[3:6], "--unshare-user", *probe[6:]]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot start a sandbox: {exc}"
    if result.returncode != 0:
        return (
            f"cannot create namespaces here ({result.stderr.strip() or f'exit code {result.returncode}'}): "
            "allow user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root"
        )
    return None


def start_sandboxed_pod(plan: PodPlan, log_dir: Path, registry: ProcessRegistry, options: SandboxOptions) -> RunningPod:
    """Start the pod's network namespace and channel, then its containers inside the sandbox."""
    helpers: list[Service] = []
    channel_dir = Path(tempfile.mkdtemp(prefix="openforge-channel-"))  # short: a socket path holds 107 bytes
    try:
        holder = registry.start(_holder_run(plan), log_dir / "netns.log")
        helpers.append(holder)
        _wait_for(lambda: _NET_UP in holder.log_path.read_text(errors="replace"), holder, "the pod's network namespace")
        targets = channel_targets(plan.sidecars, options.channel_container)
        sockets = channel_sockets(channel_dir, len(targets))
        if targets:
            forwarder = registry.start(_channel_run(list(zip(sockets, targets))), log_dir / "channel.log")
            helpers.append(forwarder)
            _wait_for(lambda: all(s.exists() for s in sockets), forwarder, "the engine channel")
        plan.sandbox.mkdir(parents=True, exist_ok=True)  # bound into every container, even a pod without volumes
        if os.geteuid() == 0:
            _hand_over(plan.sandbox)
        wrap = _Wrapper(holder.process.pid, plan.sandbox, options.mounts(plan.sandbox), tuple(sockets), options)
        sidecars: list[Service] = []
        try:
            for run in plan.sidecars:
                sidecars.append(registry.start(wrap(run), log_dir / f"{run.name}.log"))
            main = registry.start(wrap(plan.main), log_dir / "main.log")
        except BaseException:
            for service in sidecars:
                registry.stop(service)
            raise
    except BaseException:
        for service in reversed(helpers):
            registry.stop(service)
        shutil.rmtree(channel_dir, ignore_errors=True)
        raise
    return RunningPod(
        plan=plan, main=main, sidecars=sidecars, registry=registry, helpers=helpers,
        on_stop=[lambda: shutil.rmtree(channel_dir, ignore_errors=True)],
    )  # fmt: skip


@dataclass(frozen=True)
class _Wrapper:
    """A container's command line, run inside the pod's sandbox."""

    holder_pid: int
    pod_dir: Path
    mounts: list[str]
    sockets: tuple[Path, ...]  # the channel's, one per engine replica (none: the pod reaches no engine)
    options: SandboxOptions

    def __call__(self, run: ContainerRun) -> ContainerRun:
        env = {k: v for k, v in os.environ.items() if k in _KEPT_ENV or k.startswith(_KEPT_PREFIXES)}
        env.update(self.options.env)
        env.update(run.env)
        mounts = list(self.mounts)
        if self.sockets and run.name == self.options.channel_container:
            mounts += _mount_point(Path(channel_path()), {Path("/run")})
            for index, socket in enumerate(self.sockets):
                mounts += ["--ro-bind", str(socket), channel_path(index)]
            env[UPSTREAM_SOCKET_ENV] = channel_env(len(self.sockets))
        else:
            env.pop(UPSTREAM_SOCKET_ENV, None)
        argv = [
            *_DIE_WITH_EXECUTOR, *_enter(self.holder_pid),
            "bwrap", *mounts, "--bind", "/proc", "/proc", "--dev", "/dev", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
            "--chdir", str(self.options.start_dir(run.cwd, self.pod_dir)), "--clearenv",
            *(arg for name, value in env.items() for arg in ("--setenv", name, value)),
            "--", *_drop_privileges(), *run.argv,
        ]  # fmt: skip
        return replace(run, argv=argv, env={})


def _enter(holder_pid: int) -> list[str]:
    """Into the pod's network namespace, then a PID namespace of the container's own.

    Under root the PID namespace and its /proc come from unshare, so that /proc carries no
    bubblewrap overmounts and the harness's own confinement (components/rollout/_confine.py)
    may mount a /proc of its own inside; an ordinary user joins the holder's user namespace
    first and lets bubblewrap make the PID namespace (not exercised by the tests, which run as root).
    """
    if os.geteuid() == 0:
        return [
            "nsenter", f"--net=/proc/{holder_pid}/ns/net", "--",
            "unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc", "--",
        ]  # fmt: skip
    return [
        "nsenter", f"--target={holder_pid}", "--user", "--net", "--preserve-credentials", "--",
        "bwrap", "--unshare-user", "--unshare-pid", "--proc", "/proc", "--dev-bind", "/", "/", "--",
    ]  # fmt: skip


def _drop_privileges() -> list[str]:
    if os.geteuid() != 0:
        return []  # already an ordinary user: the sandbox gives no one more rights than that
    ids = str(SANDBOX_UID)
    return ["setpriv", f"--reuid={ids}", f"--regid={ids}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def _holder_run(plan: PodPlan) -> ContainerRun:
    unshare = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net"]
    argv = [*_DIE_WITH_EXECUTOR, *unshare, "--", sys.executable, "-c", _HOLDER]
    return ContainerRun(name="netns", argv=argv, env={}, cwd=Path("/"))


def _channel_run(pairs: list[tuple[Path, str]]) -> ContainerRun:
    """The forwarder from each socket to its engine replica (the channel container's ``--upstream``)."""
    argv = [*_DIE_WITH_EXECUTOR, *forwarder_argv(pairs)]
    return ContainerRun(name="channel", argv=argv, env={"PYTHONPATH": str(_PROJECT_ROOT)}, cwd=Path("/"))


def _hand_over(pod_dir: Path) -> None:
    """The pod's folder (inputs already downloaded) becomes the sandbox user's, so its containers can write there."""
    for root, dirs, files in os.walk(pod_dir):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), SANDBOX_UID, SANDBOX_UID)
    os.chown(pod_dir, SANDBOX_UID, SANDBOX_UID)


def _wait_for(ready: Any, service: Service, what: str) -> None:
    end = time.monotonic() + _START_TIMEOUT_S
    while not ready():
        if service.process.poll() is not None or time.monotonic() > end:
            raise ServiceError(f"{what} did not start: {service.log_tail(10)}")
        time.sleep(_POLL_S)
