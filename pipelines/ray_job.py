"""The train step across nodes: an Argo resource template that creates a KubeRay RayJob.

With ``trainer.nnodes`` above 1 one pod cannot hold the trainer. The train step then
asks KubeRay for a Ray cluster of ``nnodes`` pods (a head and ``nnodes - 1`` workers,
each with ``trainer.n_gpus_per_node`` GPUs) and runs the very same command on it
(``openforge step train --iteration K``) as the RayJob's entrypoint, in K8sJobMode: a
submitter Job sends it to the head, whose driver joins the cluster (``ray.init`` finds it)
and places veRL's workers on every node. Argo creates the RayJob, owns it (deleting the
workflow deletes it), watches its status and fails the step with it; KubeRay deletes the
Ray cluster once the job ends.

Every node mounts ``cluster.train_shared_claim`` (a ReadWriteMany claim) at the same path
and the driver keeps its work there (``TRAIN_WORK_DIR_ENV``): the checkpoint veRL's workers
load and the shards they save lie at paths the driver names. The driver alone gets the
config and the store's credentials; the workers get neither.

The config reaches the driver as an Argo expression, ``toJson``: a plain
``{{workflow.parameters.config}}`` would put the YAML's raw new lines inside the
manifest's text and break it. docs/trainer.md ("Training across nodes") has the rest:
what the cluster needs and where the logs are.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from hera.workflows import Parameter, Resource
from hera.workflows import models as m

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.trainer_config import TRAIN_WORK_DIR_ENV
from pipelines import pod_specs
from pipelines.steps import STEPS

RAY_JOB_API = "ray.io/v1"
RAY_JOB_KIND = "RayJob"
SHARED_MOUNT = "/shared"
CONFIG_EXPRESSION = "{{=toJson(workflow.parameters.config)}}"
# KubeRay's JobDeploymentStatus: Complete only after the job SUCCEEDED; Failed when the job
# failed, stopped or ran past a deadline; ValidationFailed when KubeRay refused the spec.
SUCCESS = "status.jobDeploymentStatus == Complete, status.jobStatus == SUCCEEDED"
FAILURE = "status.jobDeploymentStatus in (Failed, ValidationFailed)"
# Where to look from the Argo UI: the node's outputs name the RayJob and its dashboard.
OUTPUTS = {"ray-job": "{.metadata.name}", "ray-dashboard": "{.status.dashboardURL}"}
_CONFIG_SLOT = "__openforge_config__"  # json.dumps quotes it; the expression must stand bare
_SHARED_VOLUME = "shared"
_SHM_VOLUME = "dshm"  # torch's shared memory between a node's workers: the runtime's 64 MiB default is too small
_FINISHED_TTL_S = 600  # the RayJob's pods kept after the job, for their logs; the workflow's deletion ends it sooner


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def _pod(config: ExperimentConfig, head: bool) -> dict[str, Any]:
    """A Ray node's pod template: the train image and resources, the shared volume, and on
    the head alone the config and the store's credentials (the driver runs there)."""
    cluster, trainer = config.cluster, config.trainer
    spec = cluster.resources.train
    gpus = {cluster.gpu_resource: str(trainer.n_gpus_per_node)}
    env = [{"name": TRAIN_WORK_DIR_ENV, "value": SHARED_MOUNT}]
    container: dict[str, Any] = {
        "name": "ray-head" if head else "ray-worker",
        "image": cluster.train_image(trainer.backend),
        "imagePullPolicy": cluster.image_pull_policy,
        "resources": {
            "requests": {"cpu": spec.cpu, "memory": spec.memory, **gpus},
            "limits": {"memory": spec.memory, **gpus},
        },
        "securityContext": _dump(pod_specs.container_security(read_only_root=False)),
        "volumeMounts": [{"name": _SHARED_VOLUME, "mountPath": SHARED_MOUNT}, {"name": _SHM_VOLUME, "mountPath": "/dev/shm"}],
    }
    if head:
        env.append({"name": CONFIG_ENV, "value": _CONFIG_SLOT})
        container["envFrom"] = [{"secretRef": {"name": cluster.storage_secret}}]
    container["env"] = env
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": _dump(pod_specs.pod_security(cluster)),
        "containers": [container],
        "volumes": [
            {"name": _SHARED_VOLUME, "persistentVolumeClaim": {"claimName": cluster.train_shared_claim}},
            {"name": _SHM_VOLUME, "emptyDir": {"medium": "Memory"}},
        ],
        **_placement(config),
    }
    return {"metadata": {"labels": pod_specs.step_labels("train")}, "spec": pod}


def _placement(config: ExperimentConfig) -> dict[str, Any]:
    settings = pod_specs.placement(config.cluster, "train")
    placed: dict[str, Any] = {}
    if "node_selector" in settings:
        placed["nodeSelector"] = settings["node_selector"]
    if "tolerations" in settings:
        placed["tolerations"] = [_dump(t) for t in settings["tolerations"]]
    return placed


def ray_job_manifest(config: ExperimentConfig) -> dict[str, Any]:
    """The RayJob, with a slot where the config goes (``ray_job_text`` fills it)."""
    workers = config.trainer.nnodes - 1
    return {
        "apiVersion": RAY_JOB_API,
        "kind": RAY_JOB_KIND,
        "metadata": {
            # KubeRay names the Ray cluster and its services after the RayJob: keep it short.
            "generateName": "openforge-train-",
            "labels": {
                **pod_specs.step_labels("train"),
                pod_specs.EXPERIMENT_LABEL: config.name,
                pod_specs.PART_OF_LABEL: "openforge",
            },
        },
        "spec": {
            "entrypoint": shlex.join(STEPS["train"].command()),
            "submissionMode": "K8sJobMode",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": _FINISHED_TTL_S,
            "backoffLimit": 0,  # Argo's retry strategy decides retries, with a fresh RayJob
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": _pod(config, head=True)},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": workers,
                        "minReplicas": workers,
                        "maxReplicas": workers,
                        "rayStartParams": {},
                        "template": _pod(config, head=False),
                    }
                ],
            },
        },
    }


def ray_job_text(config: ExperimentConfig) -> str:
    """The manifest as Argo creates it: JSON (which is YAML), the config as an expression."""
    text = json.dumps(ray_job_manifest(config), indent=2)
    return text.replace(json.dumps(_CONFIG_SLOT), CONFIG_EXPRESSION)


def ray_job_template(config: ExperimentConfig) -> Resource:
    """The train step's template when ``trainer.nnodes`` > 1."""
    cluster = config.cluster
    return Resource(
        name="train",
        action="create",
        set_owner_reference=True,
        manifest=ray_job_text(config),
        success_condition=SUCCESS,
        failure_condition=FAILURE,
        inputs=[Parameter(name=name) for name in STEPS["train"].inputs],
        outputs=[Parameter(name=name, value_from=m.ValueFrom(json_path=path)) for name, path in OUTPUTS.items()],
        service_account_name=cluster.rayjob_service_account,
        labels=pod_specs.step_labels("train"),
        synchronization=pod_specs.gpu_semaphore(cluster),
        retry_strategy=pod_specs.retry_infrastructure(),
        **pod_specs.placement(cluster, "prepare"),  # the watching pod is small: the CPU pool
    )
