"""What a rollout pod's sandbox costs at start-up, beside the same pod as plain processes.

One pod shaped like a rollout (a main container and a `proxy` sidecar whose ``--upstream``
is the engine's address, so the sandbox starts its channel) runs through the local
executor, alternately under the `process` runtime and the `sandbox` runtime, ``REPEATS``
times each. Two kinds of main container:

- ``python -c pass``: the isolation alone (namespaces, mounts, the channel, the user switch);
- ``openforge --help``: what an `openforge` step pays; the `process` runtime forks it from
  the warm-start server, the sandbox cannot (its containers start cold, docs/executor.md).

Wall time from ``execute_workflow`` to its return (start, run, stop, artifacts), median.
"""

from __future__ import annotations

import contextlib
import http.server
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.doc_sections import Stamp
from components.core.services import openforge_argv
from components.core.storage import open_store
from pipelines.executor import ExecutorOptions, SandboxOptions, execute_workflow, sandbox_problem

SUBSECTION = "Sandboxed rollout pods, start-up"
REPEATS = 7
_SIDECAR = "import time; time.sleep(600)"
MAINS = {
    "python -c pass (isolation alone)": [sys.executable, "-c", "pass"],
    "openforge --help (an `openforge` container)": openforge_argv("--help"),
}


@dataclass(frozen=True)
class SandboxFigures(Stamp):
    seconds: dict[str, dict[str, tuple[float, ...]]]  # main -> runtime -> each run
    skipped: str = ""


def _manifest(main: list[str]) -> list[dict[str, Any]]:
    rollout = {
        "name": "rollout",
        "inputs": {"parameters": [{"name": "upstream"}]},
        "container": {"image": "runtime", "command": main},
        "sidecars": [{
            "name": "proxy", "image": "proxy", "command": [sys.executable, "-c", _SIDECAR],
            "args": ["--upstream", "http://{{inputs.parameters.upstream}}"],
        }],
    }  # fmt: skip
    arguments = {"parameters": [{"name": "upstream", "value": "{{workflow.parameters.upstream}}"}]}
    entry = {"name": "main", "dag": {"tasks": [{"name": "rollout", "template": "rollout", "arguments": arguments}]}}
    spec = {"entrypoint": "main", "arguments": {"parameters": [{"name": "upstream"}]}, "templates": [entry, rollout]}
    return [{"apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTemplate", "metadata": {"name": "pod-start"}, "spec": spec}]


@contextlib.contextmanager
def _engine_stand_in() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _run_once(manifest: list[dict[str, Any]], upstream: str, options: ExecutorOptions, work: Path) -> float:
    started = time.perf_counter()
    execute_workflow(
        manifest, parameters={"upstream": upstream}, store=open_store(f"file://{work / 'store'}"),
        workdir=work / "exec", options=options, observer=lambda event: None,
    )  # fmt: skip
    return time.perf_counter() - started


def measure(repo: Path) -> tuple[dict[str, dict[str, tuple[float, ...]]], str]:
    """Each main's runs under both runtimes, alternating; ({}, why) when sandboxes cannot run here."""
    from pipelines.warm_start import openforge_warm_starts

    problem = sandbox_problem()
    if problem:
        return {}, problem
    seconds: dict[str, dict[str, list[float]]] = {name: {"process": [], "sandbox": []} for name in MAINS}
    with _engine_stand_in() as upstream, openforge_warm_starts() as warm, tempfile.TemporaryDirectory() as scratch:
        if not warm.wait_ready(300):
            raise RuntimeError("the warm-start server did not become ready within 300 s")
        runtimes = {
            "process": ExecutorOptions(cwd=repo, warm=warm),
            "sandbox": ExecutorOptions(cwd=repo, warm=warm, sandbox=SandboxOptions()),
        }
        for name, main in MAINS.items():
            for index in range(REPEATS):
                for runtime, options in runtimes.items():
                    work = Path(scratch) / f"{runtime}-{len(seconds[name][runtime])}-{index}"
                    seconds[name][runtime].append(_run_once(_manifest(main), upstream, options, work))
    return {name: {r: tuple(v) for r, v in by.items()} for name, by in seconds.items()}, ""


def table_lines(figures: SandboxFigures) -> list[str]:
    lines = ["| main container | process runtime | sandbox runtime | sandbox - process | sandbox / process |", "|---|---:|---:|---:|---:|"]
    for name, by in figures.seconds.items():
        plain, boxed = statistics.median(by["process"]), statistics.median(by["sandbox"])
        lines.append(f"| {name} | {plain:.2f} s | {boxed:.2f} s | {boxed - plain:+.2f} s | {boxed / plain:.1f}x |")
    return lines


def subsection_markdown(figures: SandboxFigures) -> str:
    f = figures
    body = (
        table_lines(f)
        if f.seconds
        else [f"**Not measured**: {f.skipped}"]
    )
    lines = [
        f"### {SUBSECTION}",
        "",
        f.stamp_line(),
        "",
        "One pod shaped like a rollout (a main container and a `proxy` sidecar whose `--upstream` is an engine "
        "stand-in on loopback) through the local executor, the `process` and the `sandbox` runtime alternating, "
        f"{REPEATS} runs each; wall time of the whole pod (start, run, stop), median. The `process` runtime forks "
        "`openforge` containers from the warm-start server; sandboxed containers start cold.",
        "",
        *body,
    ]
    return "\n".join(lines) + "\n"


def terminal_lines(figures: SandboxFigures) -> list[str]:
    if not figures.seconds:
        return [f"sandbox start-up not measured: {figures.skipped}"]
    return [line for line in table_lines(figures) if not line.startswith("|---")]
