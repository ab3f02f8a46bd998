"""What each pod of the workflow gets from the config's ``cluster`` section.

Resources, node placement, the GPU semaphore, security contexts and retry strategies,
one function each, so pipelines/iteration.py only says which step gets which. None of
this changes what a step computes: the local executor ignores all of it
(docs/executor.md), and a cluster uses it to place, bound and protect the pods.
"""

from __future__ import annotations

from typing import Any

from hera.workflows import Env, Parameter, Resources, RetryStrategy, S3Artifact
from hera.workflows import models as m

from components.core.cluster_config import ClusterConfig, Placement
from components.core.config import CONFIG_ENV
from components.core.storage import RunLayout
from pipelines.steps import StepSpec

GPU_STEPS = ("serve", "serve-teacher", "train", "sft")
# Labels the cluster's NetworkPolicies select on (argo/cluster/network-policies.yaml).
STEP_LABEL = "openforge.dev/step"
EXPERIMENT_LABEL = "openforge.dev/experiment"
PART_OF_LABEL = "app.kubernetes.io/part-of"
CONFIG_TEXT = "{{workflow.parameters.config}}"

# Failure kinds (docs/operations.md): Argo calls a pod that the system around it broke
# (deleted, evicted, node lost, artifact transfer failed) an *Error*, and a main container
# that exited non-zero a *Failure*.
_BACKOFF = m.Backoff(duration="15s", factor=m.IntOrString(2), max_duration="10m")


def retry_infrastructure() -> RetryStrategy:
    """Errors only: a rollout records every agent failure as an outcome and exits 0, so its
    pod fails only when the infrastructure does; retrying a real failure (a serve or train
    step that ran out of memory) would burn GPU hours to fail again."""
    return RetryStrategy(limit=2, retry_policy="OnError", backoff=_BACKOFF)


def retry_any() -> RetryStrategy:
    """Errors and failures: for the short CPU steps, whose store writes are idempotent
    (deterministic keys), so a transient storage or tracking failure costs one rerun."""
    return RetryStrategy(limit=2, retry_policy="Always", backoff=_BACKOFF)


def resources(cluster: ClusterConfig, step: str) -> Resources:
    spec = getattr(cluster.resources, step)
    return Resources(
        cpu_request=spec.cpu,
        memory_request=spec.memory,
        memory_limit=spec.memory,
        gpus=spec.gpu or None,
        gpu_flag=cluster.gpu_resource,
    )


def placement(cluster: ClusterConfig, step: str) -> dict[str, Any]:
    """nodeSelector and tolerations for a step's pod: the GPU pool for serve and train."""
    nodes: Placement = cluster.gpu_nodes if step in GPU_STEPS else cluster.cpu_nodes
    settings: dict[str, Any] = {}
    if nodes.node_selector:
        settings["node_selector"] = dict(nodes.node_selector)
    if nodes.tolerations:
        settings["tolerations"] = [m.Toleration(**t.model_dump(exclude_none=True)) for t in nodes.tolerations]
    return settings


def gpu_semaphore(cluster: ClusterConfig) -> m.Synchronization:
    """Serve and train hold it: its ConfigMap value is how many GPU steps the namespace runs at once."""
    ref = m.ConfigMapKeySelector(name=cluster.gpu_semaphore.config_map, key=cluster.gpu_semaphore.key)
    return m.Synchronization(semaphores=[m.SemaphoreRef(config_map_key_ref=ref)])


def experiment_mutex(experiment: str) -> m.Synchronization:
    """One workflow of an experiment at a time, whoever started it (cron, submit, UI): two runs
    of the same iteration would overwrite each other's rollouts."""
    return m.Synchronization(mutexes=[m.Mutex(name=f"openforge-{experiment}")])


def pod_security(cluster: ClusterConfig) -> m.PodSecurityContext:
    """Every pod: a fixed non-root user, the runtime's default seccomp profile."""
    uid = cluster.run_as_user
    return m.PodSecurityContext(
        run_as_non_root=True,
        run_as_user=uid,
        run_as_group=uid,
        fs_group=uid,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def container_security(read_only_root: bool) -> m.SecurityContext:
    """No privilege escalation, no capabilities; a read-only root where the container allows it."""
    return m.SecurityContext(
        allow_privilege_escalation=False,
        capabilities=m.Capabilities(drop=["ALL"]),
        read_only_root_filesystem=read_only_root or None,
    )


def step_labels(step: str) -> dict[str, str]:
    return {STEP_LABEL: step}


def config_env() -> list[Env]:
    """Every container's config: the workflow's `config` parameter, as the steps read it."""
    return [Env(name=CONFIG_ENV, value=CONFIG_TEXT)]


def step_inputs(spec: StepSpec, layout: RunLayout) -> list[Any] | None:
    """The template's inputs as the step's spec declares them: parameters, then artifacts."""
    artifacts = [S3Artifact(name=a.name, path=a.path, key=a.key(layout)) for a in spec.artifacts_in]
    return [*(Parameter(name=name) for name in spec.inputs), *artifacts] or None


def empty_dir(name: str) -> m.Volume:
    return m.Volume(name=name, empty_dir=m.EmptyDirVolumeSource())
