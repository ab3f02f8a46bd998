"""The local executor: runs a compiled Argo workflow on this machine (the `process` runtime).

The manifest `openforge compile` writes is the single source of truth: this package walks
its DAG (parameters, dependencies, withParam fan-out, daemon steps, sidecars, artifacts)
and runs each container as a local process (the `process` runtime), the rollout pods
in namespaces of their own (the `sandbox` runtime) or with `podman kube play` (the
`podman` runtime). docs/executor.md describes the mapping.
"""

from components.core.lazy import lazy_exports

__all__ = [
    "ExecutorOptions",
    "ManifestError",
    "NodeEvent",
    "NodePhase",
    "NodeResult",
    "PodmanOptions",
    "SandboxOptions",
    "WorkflowFailed",
    "WarmStarts",
    "WorkflowResult",
    "execute_workflow",
    "podman_problem",
    "sandbox_problem",
]

# Loaded on first use: the run view needs only the events, and `openforge --help` none of it.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ExecutorOptions": "pipelines.executor._context:ExecutorOptions",
        "NodeResult": "pipelines.executor._context:NodeResult",
        "NodeEvent": "pipelines.executor._events:NodeEvent",
        "NodePhase": "pipelines.executor._events:NodePhase",
        "WorkflowFailed": "pipelines.executor._execute:WorkflowFailed",
        "WorkflowResult": "pipelines.executor._execute:WorkflowResult",
        "execute_workflow": "pipelines.executor._execute:execute_workflow",
        "ManifestError": "pipelines.executor._manifest:ManifestError",
        "PodmanOptions": "pipelines.executor._podman:PodmanOptions",
        "podman_problem": "pipelines.executor._podman:podman_problem",
        "SandboxOptions": "pipelines.executor._isolation:SandboxOptions",
        "sandbox_problem": "pipelines.executor._isolation:sandbox_problem",
        "WarmStarts": "pipelines.executor._warm:WarmStarts",
    },
)
