"""A pod's containers as local command lines: container paths and ports mapped onto this machine.

Each pod gets a sandbox folder. Its volumes (emptyDir) become folders in the sandbox,
shared by the containers that mount them; artifact and output-parameter paths outside
any mount get their own place in the sandbox. Each well-known port of the pod gets a
free loopback port. The text *written in the manifest* (command, args, env values) is
rewritten accordingly; values substituted from parameters are data and stay as they
are (see ``_templating``). docs/executor.md states the rules and their limits.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.services import free_port
from pipelines.executor._manifest import ManifestError
from pipelines.executor._templating import map_manifest_text, split_marked, unmark

LOOPBACK = "127.0.0.1"
_HOST_PORT = re.compile(r"(?<![\w.])(?:127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{1,5})(?!\d)")
_ANY_HOST = re.compile(r"(?<![\w.])0\.0\.0\.0(?![\w.])")
_PORT_FLAG = "--port"
# The project root, so `openforge` command lines import this very checkout.
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


class _PortLeases:
    """Loopback ports handed to live pods of this process, never handed to two at once.

    Why: ``free_port`` only says a port was free a moment ago, and pods planned in
    parallel could draw the same one. The second sidecar then fails to bind while its
    main container, polling the same port, talks to the *first* pod's proxy, which
    records the calls in the wrong pod (an ``ok`` rollout without a trajectory).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[int] = set()

    def lease(self, count: int) -> list[int]:
        ports: list[int] = []
        with self._lock:
            while len(ports) < count:
                port = free_port()
                if port not in self._held:
                    self._held.add(port)
                    ports.append(port)
        return ports

    def release(self, ports: Iterable[int]) -> None:
        with self._lock:
            self._held.difference_update(ports)


_PORT_LEASES = _PortLeases()


@dataclass(frozen=True)
class PathMap:
    """Container path prefixes and the local folders they stand for."""

    prefixes: tuple[tuple[str, Path], ...]  # longest prefix first
    fallback: Path

    def local(self, container_path: str) -> Path:
        """Where ``container_path`` lives on this machine."""
        for prefix, host in self.prefixes:
            if container_path == prefix or container_path.startswith(prefix + "/"):
                return host / container_path[len(prefix) :].lstrip("/")
        return self.fallback / container_path.lstrip("/")

    def rewrite(self, text: str) -> str:
        if not self.prefixes:
            return text
        # A prefix counts only as a whole path component: `/work` maps in `/work/x` and
        # `--out=/work`, never in `/workspace` or `a/work`.
        alternatives = "|".join(re.escape(p) for p, _ in self.prefixes)
        pattern = re.compile(rf"(?<![\w.\-/])({alternatives})(?![\w.\-])")
        return pattern.sub(lambda m: str(self.local(m.group(1))), text)


@dataclass(frozen=True)
class PortMap:
    """The pod's well-known ports and the loopback ports that stand in for them."""

    ports: Mapping[int, int]

    def rewrite(self, text: str) -> str:
        def host_port(match: re.Match[str]) -> str:
            port = int(match.group(1))
            return f"{LOOPBACK}:{self.ports.get(port, port)}"

        return _ANY_HOST.sub(LOOPBACK, _HOST_PORT.sub(host_port, text))

    def rewrite_args(self, args: list[str]) -> list[str]:
        out: list[str] = []
        for arg in args:
            if out and out[-1] == _PORT_FLAG and arg.isdigit():
                arg = str(self.ports.get(int(arg), int(arg)))
            elif arg.startswith(_PORT_FLAG + "=") and arg[len(_PORT_FLAG) + 1 :].isdigit():
                port = int(arg[len(_PORT_FLAG) + 1 :])
                arg = f"{_PORT_FLAG}={self.ports.get(port, port)}"
            else:
                arg = map_manifest_text(arg, self.rewrite)
            out.append(arg)
        return out


@dataclass(frozen=True)
class ContainerRun:
    """One container as a local process."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class PodPlan:
    """Everything needed to run one pod locally."""

    sandbox: Path
    main: ContainerRun
    sidecars: list[ContainerRun]
    ports: PortMap
    paths: PathMap  # the main container's view (artifact and output paths)

    def release_ports(self) -> None:
        """The pod is gone: its loopback ports may go to another pod."""
        _PORT_LEASES.release(self.ports.ports.values())

    def local_port(self, port: int | str, where: str) -> int:
        if isinstance(port, str) and not port.isdigit():
            raise ManifestError(f"{where}: named port {port!r} is not supported; use the number")
        return self.ports.ports.get(int(port), int(port))


def plan_pod(
    template: dict[str, Any],
    volumes: Mapping[str, dict[str, Any]],
    sandbox: Path,
    cwd: Path,
    programs: Mapping[str, list[str]],
    where: str,
) -> PodPlan:
    """Map ``template`` (resolved, data still marked) onto ``sandbox`` and free loopback ports.

    ``programs`` maps an image's program names (``openforge``) to local command lines.
    """
    main = template.get("container")
    if not main:
        raise ManifestError(f"{where}: a pod template needs a container")
    sidecars = list(template.get("sidecars") or [])
    known_volumes = {**volumes, **{v["name"]: v for v in template.get("volumes") or []}}
    main_paths = _path_map(main, known_volumes, sandbox, where, extra=tuple(_artifact_paths(template)))
    well_known = sorted(_well_known_ports([main, *sidecars]))
    ports = PortMap(dict(zip(well_known, _PORT_LEASES.lease(len(well_known)), strict=True)))
    try:
        return PodPlan(
            sandbox=sandbox,
            main=_container_run(main, "main", main_paths, ports, cwd, programs, where),
            sidecars=[
                _container_run(
                    c, c.get("name") or f"sidecar-{i}", _path_map(c, known_volumes, sandbox, where), ports, cwd, programs, where
                )
                for i, c in enumerate(sidecars)
            ],
            ports=ports,
            paths=main_paths,
        )
    except BaseException:
        _PORT_LEASES.release(ports.ports.values())
        raise


def _artifact_paths(template: dict[str, Any]) -> list[str]:
    paths = [a["path"] for a in (template.get("inputs") or {}).get("artifacts", []) if a.get("path")]
    outputs = template.get("outputs") or {}
    paths += [a["path"] for a in outputs.get("artifacts", []) if a.get("path")]
    paths += [p["valueFrom"]["path"] for p in outputs.get("parameters", []) if (p.get("valueFrom") or {}).get("path")]
    return [unmark(p) for p in paths]


def _path_map(
    container: dict[str, Any], volumes: Mapping[str, dict[str, Any]], sandbox: Path, where: str, extra: tuple[str, ...] = ()
) -> PathMap:
    prefixes: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise ManifestError(f"{where}: volumeMount {mount['name']!r} names no volume of the template or workflow")
        if "emptyDir" not in volume:
            raise ManifestError(f"{where}: volume {mount['name']!r} is not an emptyDir; only emptyDir runs locally")
        host = sandbox / "volumes" / mount["name"] / mount.get("subPath", "")
        prefixes[unmark(mount["mountPath"]).rstrip("/") or "/"] = host
    for host in prefixes.values():
        host.mkdir(parents=True, exist_ok=True)
    fallback = sandbox / "fs"
    base = PathMap(tuple(prefixes.items()), fallback)
    for path in extra:
        local = base.local(path)
        local.parent.mkdir(parents=True, exist_ok=True)
        prefixes.setdefault(path.rstrip("/"), local)
    ordered = tuple(sorted(prefixes.items(), key=lambda item: len(item[0]), reverse=True))
    return PathMap(ordered, fallback)


def _manifest_texts(container: dict[str, Any]) -> list[str]:
    texts = [*container.get("command", []), *container.get("args", [])]
    texts += [e["value"] for e in container.get("env") or [] if isinstance(e.get("value"), str)]
    return texts


def _well_known_ports(containers: list[dict[str, Any]]) -> set[int]:
    """Ports the pod listens on or talks to on loopback, as written in the manifest."""
    ports: set[int] = set()
    for container in containers:
        ports.update(int(p["containerPort"]) for p in container.get("ports") or [])
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            port = ((container.get(probe) or {}).get("httpGet") or {}).get("port")
            if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
                ports.add(int(port))
        argv = [*container.get("command", []), *container.get("args", [])]
        for flag, value in zip(argv, argv[1:]):
            if flag == _PORT_FLAG and value.isdigit():
                ports.add(int(value))
        for text in _manifest_texts(container):
            for segment, is_data in split_marked(text):
                if not is_data:
                    ports.update(int(m.group(1)) for m in _HOST_PORT.finditer(segment))
            if text.startswith(_PORT_FLAG + "=") and text[len(_PORT_FLAG) + 1 :].isdigit():
                ports.add(int(text[len(_PORT_FLAG) + 1 :]))
    return ports


def _local_secret(ref: dict[str, Any], container: str, where: str) -> str:
    """A Secret's key as this machine holds it: the environment variable of the key's name
    (components/core/teacher_config.py), given to the one container that asks for it."""
    key = str(ref.get("key") or "")
    value = os.environ.get(key)
    if not value:
        raise ManifestError(
            f"{where}: container {container!r} needs key {key!r} of Secret {ref.get('name')!r}; here it is read from "
            f"the environment variable {key}: export it before running"
        )
    return value


def _container_run(
    container: dict[str, Any],
    name: str,
    paths: PathMap,
    ports: PortMap,
    cwd: Path,
    programs: Mapping[str, list[str]],
    where: str,
) -> ContainerRun:
    command = list(container.get("command") or [])
    if not command:
        raise ManifestError(f"{where}: container {name!r} has no command (image entrypoints do not exist locally)")

    def local_text(text: str) -> str:
        return map_manifest_text(text, paths.rewrite)

    # The executable itself is never mapped: it is a program on this machine, not a file in the pod.
    rest = ports.rewrite_args([local_text(a) for a in command[1:] + list(container.get("args") or [])])
    argv = [command[0], *rest]
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        if isinstance(entry.get("value"), str):
            env[entry["name"]] = unmark(map_manifest_text(local_text(entry["value"]), ports.rewrite))
        elif (secret := (entry.get("valueFrom") or {}).get("secretKeyRef")) is not None:
            env[entry["name"]] = _local_secret(secret, name, where)
        # Other valueFrom (field refs) have no local source; the process runtime inherits the
        # host's environment (credentials included), the sandbox only OPENFORGE_* of it.
    argv = unmark(argv)
    if argv[0] in programs:
        # The image's program is this project's CLI: run it with this interpreter and checkout.
        argv = [*programs[argv[0]], *argv[1:]]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
    workdir = container.get("workingDir")
    return ContainerRun(name=name, argv=argv, env=env, cwd=paths.local(unmark(workdir)) if workdir else cwd)
