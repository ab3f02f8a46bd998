"""The ``podman`` runtime: a pod of the manifest run for real with ``podman kube play``.

The pod is the template's own: its main container and sidecars with their command, args,
env, volume mounts and security contexts, the workflow's pod security context (user 1000,
non-root). What changes, and why (docs/executor.md has the whole list):

- **no network** (`podman kube play --network none`): the pod's containers share a
  network namespace holding only loopback, as in the `sandbox` runtime. The proxy
  sidecar reaches the serve step (a process on this machine's loopback) through a Unix
  socket mounted into it alone, forwarded outside to its `--upstream` (`_channel.py`,
  `$OPENFORGE_UPSTREAM_SOCKET`). The pod's ports are still mapped to free loopback ports
  as in the `process` runtime, and paths are not: each emptyDir is a `hostPath` to its
  folder in the sandbox, mounted at the container path the manifest names, so artifacts
  go in and out as in the `process` runtime.
- **one local image** for every container (`PodmanOptions.image`, built by `make
  podman-base`), with this checkout and its venv's site-packages mounted read-only at
  their own paths: the real images (images/) cannot be built without a registry, and
  copying a multi-GB venv into an image on every code change would cost minutes.
  Whatever else a pod needs from this machine (the installed agent harnesses, which a
  harness image carries on a cluster) the caller names in `PodmanOptions.mounts` and
  `PodmanOptions.env`: the executor runs manifests and knows nothing of what they run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.core.services import ServiceError
from components.proxy.cli import UPSTREAM_SOCKET_ENV
from pipelines.executor._channel import CHANNEL_CONTAINER, channel_env, channel_path, channel_sockets, channel_targets, forwarder_argv
from pipelines.executor._sandbox import PodPlan
from pipelines.executor._templating import ManifestError, map_manifest_text, unmark

LOCAL_IMAGE = "localhost/openforge/local:0.1.0"
POD_LABEL = "openforge.dev/runtime"  # every pod this runtime starts carries it: `podman pod ps --filter label=...`
_POLL_S = 0.2
_REMOVE_TRIES = 4
_REMOVE_BACKOFF_S = 0.5
_CHANNEL_VOLUME = "openforge-engine-channel"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PodmanOptions:
    """Which pods run under podman, and with what image."""

    image: str = LOCAL_IMAGE
    templates: frozenset[str] = field(default_factory=lambda: frozenset({"rollout"}))
    """Names of the container templates that run as podman pods; every other runs as processes."""
    podman: str = "podman"
    mounts: Mapping[str, Path] = field(default_factory=dict)
    """Folders of this machine every container sees read-only at their own path, by volume name."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables every container gets besides its manifest's (e.g. where one of those mounts is)."""
    channel_container: str = CHANNEL_CONTAINER
    """The one container that reaches its ``--upstream`` (the engine), through a Unix socket."""

    def runs(self, template: Mapping[str, Any]) -> bool:
        return template.get("name") in self.templates and not template.get("daemon")


class PodmanUnavailable(RuntimeError):
    """Podman cannot run pods on this machine; the message says why and what to run."""


def podman_problem(options: PodmanOptions) -> str | None:
    """Why pods cannot run here (no podman, no local image), or None when they can."""
    if shutil.which(options.podman) is None:
        return f"{options.podman!r} is not installed: run `make podman-base`"
    try:
        found = subprocess.run(
            [options.podman, "image", "exists", options.image], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"podman does not answer: {exc}"
    if found.returncode != 0:
        return f"no local image {options.image!r}: run `make podman-base` (images/local/build-base.sh)"
    return None


@dataclass
class _Logs:
    """A container's log file, as `_pod_node` reads a process's."""

    log_path: Path

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"


@dataclass
class PodmanPod:
    """A pod started with `podman kube play`; same interface as the process runtime's pod."""

    name: str
    containers: list[str]  # main first
    log_dir: Path
    options: PodmanOptions
    stop_timeout_s: float
    main: _Logs = field(init=False)
    channel: subprocess.Popen | None = None  # the forwarder of the proxy's channel to the engine
    channel_dir: Path | None = None
    _stopped: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.main = _Logs(self.log_dir / "main.log")

    def wait(self, deadline_s: float | None, cancel: threading.Event) -> int | None:
        """The main container's exit code; None when the deadline or a cancel stopped it."""
        end = time.monotonic() + deadline_s if deadline_s else None
        waiter = subprocess.Popen(
            [self.options.podman, "wait", self._container("main")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        try:
            while True:
                try:
                    out, _ = waiter.communicate(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    if cancel.is_set() or (end is not None and time.monotonic() > end):
                        return None
        finally:
            if waiter.poll() is None:
                waiter.kill()
                waiter.wait()
        try:
            return int(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise ServiceError(f"podman wait {self._container('main')}: no exit code ({out!r})") from None

    def stop(self) -> None:
        """Stop the pod (SIGTERM, then SIGKILL after the grace), keep each container's log, remove it."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        podman = self.options.podman
        grace = str(max(1, round(self.stop_timeout_s)))
        _quiet([podman, "pod", "stop", "-t", grace, self.name])
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for container in self.containers:
            log = self.log_dir / f"{container}.log"
            with log.open("wb") as out:
                subprocess.run([podman, "logs", self._container(container)], stdout=out, stderr=subprocess.STDOUT, check=False)
        left = _remove_pod(podman, self.name)
        if left:
            # The rollout's outputs are already saved, so a pod that will not go is reported, not raised:
            # raising here would fail a finished rollout over host cleanup.
            message = f"podman pod {self.name} was not removed ({left}); remove it with `podman pod rm -f {self.name}`"
            (self.log_dir / "removal.log").write_text(message + "\n")
            print(f"openforge: {message}", file=sys.stderr, flush=True)
        if self.channel is not None:
            self.channel.terminate()
            try:
                self.channel.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.channel.kill()
        if self.channel_dir is not None:
            shutil.rmtree(self.channel_dir, ignore_errors=True)

    def _container(self, name: str) -> str:
        return f"{self.name}-{name}"  # how `podman kube play` names a pod's containers


def start_podman_pod(
    plan: PodPlan,
    template: dict[str, Any],
    pod_security: Mapping[str, Any],
    log_dir: Path,
    options: PodmanOptions,
    stop_timeout_s: float,
) -> PodmanPod:
    """Write the pod's Kubernetes spec into its sandbox and start it with `podman kube play`."""
    name = "openforge-" + hashlib.sha1(str(plan.sandbox).encode()).hexdigest()[:16]
    targets = channel_targets(plan.sidecars, options.channel_container)
    channel_dir = Path(tempfile.mkdtemp(prefix="openforge-channel-")) if targets else None
    sockets = channel_sockets(channel_dir, len(targets)) if channel_dir else []
    spec = pod_spec(name, plan, template, pod_security, options, sockets)
    path = plan.sandbox / "pod.yaml"
    path.write_text(json.dumps(spec, indent=1))  # JSON is YAML; kube play reads it as is
    _quiet([options.podman, "pod", "rm", "-f", name])  # a leftover of a killed run with this sandbox
    pod = PodmanPod(name, [c["name"] for c in spec["spec"]["containers"]], log_dir, options, stop_timeout_s, channel_dir=channel_dir)
    if sockets:
        log_dir.mkdir(parents=True, exist_ok=True)
        with (log_dir / "channel.log").open("wb") as log:
            pod.channel = subprocess.Popen(
                forwarder_argv(list(zip(sockets, targets))), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(_PROJECT_ROOT)},
            )  # fmt: skip
        for socket in sockets:
            _wait_for_socket(socket, pod.channel)
    played = subprocess.run(
        [options.podman, "kube", "play", "--quiet", "--network", "none", str(path)], capture_output=True, text=True, check=False
    )
    if played.returncode != 0:
        pod.stop()
        raise ServiceError(f"podman kube play {path} failed: {played.stderr.strip() or played.stdout.strip()}")
    return pod


def _wait_for_socket(socket: Path, forwarder: subprocess.Popen, timeout_s: float = 10.0) -> None:
    end = time.monotonic() + timeout_s
    while not socket.exists():
        if forwarder.poll() is not None or time.monotonic() > end:
            raise ServiceError(f"the engine channel {socket} did not start (forwarder exit code {forwarder.poll()})")
        time.sleep(0.02)


def pod_spec(
    name: str,
    plan: PodPlan,
    template: dict[str, Any],
    pod_security: Mapping[str, Any],
    options: PodmanOptions,
    channel: list[Path] | None = None,
) -> dict[str, Any]:
    channel = channel or []
    """The template's pod as a core/v1 Pod that podman runs on this machine (see the module doc)."""
    volumes = sorted({m["name"] for c in _containers(template) for m in c.get("volumeMounts") or []})
    site = Path(sysconfig.get_paths()["purelib"])
    mounts = {"openforge-checkout": _PROJECT_ROOT, "openforge-site-packages": site, **options.mounts}
    env = [{"name": "PYTHONPATH", "value": f"{_PROJECT_ROOT}{os.pathsep}{site}"}]
    env += [{"name": k, "value": v} for k, v in options.env.items()]
    for volume in volumes:
        # The containers run as a non-root user; the sandbox folders (the volume and the
        # folders made in it for artifacts, e.g. /work/out) are made by this one.
        for folder, _, _ in os.walk(plan.sandbox / "volumes" / volume):
            os.chmod(folder, 0o777)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {POD_LABEL: "podman"}},
        "spec": {
            "hostNetwork": False,
            "restartPolicy": "Never",
            "securityContext": {**pod_security, **(template.get("securityContext") or {})},
            "containers": [
                _with_channel(_container(c, n, plan, options.image, env, mounts), channel, n == options.channel_container)
                for c, n in zip(_containers(template), ["main", *(s["name"] for s in template.get("sidecars") or [])])
            ],
            "volumes": [
                *({"name": v, "hostPath": {"path": str(plan.sandbox / "volumes" / v), "type": "Directory"}} for v in volumes),
                *({"name": n, "hostPath": {"path": str(p), "type": "Directory"}} for n, p in mounts.items()),
                *({"name": _channel_volume(i), "hostPath": {"path": str(s), "type": "Socket"}} for i, s in enumerate(channel)),
            ],
        },
    }


def _with_channel(container: dict[str, Any], channel: list[Path], is_proxy: bool) -> dict[str, Any]:
    """The proxy container, and only it, gets the sockets to the engine (one per replica) and the variable naming them."""
    if not channel or not is_proxy:
        return container
    mounts = [{"name": _channel_volume(i), "mountPath": channel_path(i)} for i in range(len(channel))]
    variable = {"name": UPSTREAM_SOCKET_ENV, "value": channel_env(len(channel))}
    return {**container, "env": [*container["env"], variable], "volumeMounts": [*container["volumeMounts"], *mounts]}


def _channel_volume(replica: int) -> str:
    return _CHANNEL_VOLUME if replica == 0 else f"{_CHANNEL_VOLUME}-{replica}"


def _containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [template["container"], *(template.get("sidecars") or [])]


def _container(
    container: dict[str, Any],
    name: str,
    plan: PodPlan,
    image: str,
    extra_env: list[dict[str, str]],
    mounts: Mapping[str, Path],
) -> dict[str, Any]:
    command = list(container.get("command") or [])
    args = plan.ports.rewrite_args(command[1:] + list(container.get("args") or []))
    if any((e.get("valueFrom") or {}).get("secretKeyRef") for e in container.get("env") or []):
        # Its pod spec is a file on disk: a secret written there would outlive the pod.
        raise ManifestError(f"container {name!r} reads a Secret, which the podman runtime cannot pass; use --runtime sandbox")
    env = [
        {"name": e["name"], "value": unmark(map_manifest_text(e["value"], plan.ports.rewrite))}
        for e in container.get("env") or []
        if isinstance(e.get("value"), str)
    ]
    volume_mounts = [{"name": m["name"], "mountPath": unmark(m["mountPath"])} for m in container.get("volumeMounts") or []]
    volume_mounts += [{"name": n, "mountPath": str(p), "readOnly": True} for n, p in mounts.items()]
    spec: dict[str, Any] = {
        "name": name,
        "image": image,
        "command": unmark([command[0], *args]),
        "env": [*env, *extra_env],
        "volumeMounts": volume_mounts,
    }
    if container.get("securityContext"):
        spec["securityContext"] = container["securityContext"]
    return spec


def _remove_pod(podman: str, name: str) -> str | None:
    """Remove a pod, retrying while podman is busy (its lock or a container still stopping); why it stayed, if it did."""
    why = None
    for attempt in range(_REMOVE_TRIES):
        removed = subprocess.run([podman, "pod", "rm", "-f", name], capture_output=True, text=True, check=False)
        if removed.returncode == 0:
            return None
        why = removed.stderr.strip() or removed.stdout.strip() or f"exit {removed.returncode}"
        if "no pod with name or ID" in why:
            return None  # already gone
        if attempt + 1 < _REMOVE_TRIES:
            time.sleep(_REMOVE_BACKOFF_S * (attempt + 1))
    return why


def _quiet(argv: list[str]) -> None:
    subprocess.run(argv, capture_output=True, check=False)
