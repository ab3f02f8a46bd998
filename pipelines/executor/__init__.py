"""The local executor: runs a compiled Argo workflow on this machine (the `process` runtime).

The manifest `openforge compile` writes is the single source of truth: this package walks
its DAG (parameters, dependencies, withParam fan-out, daemon steps, sidecars, artifacts)
and runs each container as a local process (the `process` runtime), or the rollout pods
with `podman kube play` (the `podman` runtime). docs/executor.md describes the mapping.
"""

from pipelines.executor._context import ExecutorOptions, NodeResult
from pipelines.executor._events import NodeEvent, NodePhase
from pipelines.executor._execute import WorkflowFailed, WorkflowResult, execute_workflow
from pipelines.executor._manifest import ManifestError
from pipelines.executor._podman import PodmanOptions, podman_problem
from pipelines.executor._warm import WarmStarts

__all__ = [
    "ExecutorOptions",
    "ManifestError",
    "NodeEvent",
    "NodePhase",
    "NodeResult",
    "PodmanOptions",
    "WorkflowFailed",
    "WarmStarts",
    "WorkflowResult",
    "execute_workflow",
    "podman_problem",
]
