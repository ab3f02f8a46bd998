"""The ``cluster`` section of the experiment config: how the workflow's pods run on Kubernetes.

The local executor ignores all of it (docs/executor.md); the compiler turns it into the
templates' images, resources, placement, semaphore, retries, deadlines and clean-up, and
``openforge deploy`` / ``submit`` into the namespace and server they talk to. Every name
that becomes a Kubernetes object reference is checked here, so a typo fails at load time
instead of as a pod stuck in Pending.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
_CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?]+$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _k8s_name(value: str, what: str) -> str:
    if len(value) > 63 or not _DNS1123_LABEL.match(value):
        raise ValueError(
            f"{what} {value!r} is not a Kubernetes name: use lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters"
        )
    return value


def sibling_image(image: str, *, name: str | None = None, suffix: str = "") -> str:
    """``image`` with its last path part renamed (``name``) or extended (``suffix``), same registry and tag.

    The images of images/ are built as siblings (``openforge/runtime``, ``openforge/runtime-codex``,
    ``openforge/trainer``), so one ``cluster.image`` names them all. A digest names exactly one
    image, so no sibling can be derived from it.
    """
    if "@" in image:
        raise ValueError(
            f"cannot derive the {name or 'runtime' + suffix} image from {image!r}, which is pinned by digest: "
            "set cluster.trainer_image / cluster.rollout_image explicitly"
        )
    slash = image.rfind("/")
    colon = image.rfind(":")
    repository, tag = (image[:colon], image[colon:]) if colon > slash else (image, "")
    head, _, last = repository.rpartition("/")
    renamed = (name or last) + suffix
    return f"{head}/{renamed}{tag}" if head else f"{renamed}{tag}"


class Resources(_Section):
    """One container's requests (and memory limit); ``gpu`` becomes a limit of ``cluster.gpu_resource``."""

    cpu: str | None = Field(None, description="CPU request, e.g. '500m' or '2' (no limit: CPU is shared).")
    memory: str | None = Field(None, description="Memory request and limit, e.g. '2Gi'.")
    gpu: int = Field(0, ge=0, description="GPUs this container needs.")

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str | None) -> str | None:
        if value is not None and not _QUANTITY.match(value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity: write e.g. '500m', '2', '512Mi' or '4Gi'")
        return value


class StepResources(_Section):
    """Per step; the defaults fit a small model on one GPU node and CPU nodes for the rest."""

    prepare: Resources = Resources(cpu="250m", memory="512Mi")
    serve: Resources = Resources(cpu="4", memory="32Gi", gpu=1)
    rollout: Resources = Resources(cpu="1", memory="2Gi")
    proxy: Resources = Resources(cpu="250m", memory="256Mi")
    score: Resources = Resources(cpu="500m", memory="1Gi")
    train: Resources = Resources(cpu="8", memory="64Gi", gpu=1)
    commit: Resources = Resources(cpu="250m", memory="512Mi")


class Toleration(_Section):
    key: str | None = Field(None, description="Taint key (unset with operator Exists: tolerate every taint).")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _exists_has_no_value(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists takes no value; remove value or use operator Equal")
        return self


class Placement(_Section):
    """Which nodes a group of steps may run on."""

    node_selector: dict[str, str] = Field(default_factory=dict, description="Node labels the pods require.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Taints the pods tolerate.")


class ConfigMapKey(_Section):
    config_map: str
    key: str

    @field_validator("config_map")
    @classmethod
    def _name(cls, value: str) -> str:
        return _k8s_name(value, "ConfigMap")


class CronConfig(_Section):
    """The CronWorkflow of continual training (one iteration per scheduled run)."""

    schedules: list[str] = Field(
        default_factory=lambda: ["0 */4 * * *"], min_length=1, description="Cron expressions (5 fields) or @hourly-style macros."
    )
    timezone: str = Field("UTC", description="IANA time zone of the schedules.")
    starting_deadline_s: int = Field(
        600, ge=0, description="A run that could not start this long after its time is skipped, not queued."
    )
    suspend: bool = Field(False, description="Deploy the schedule suspended (resume it from the Argo UI).")
    history_limit: int = Field(3, ge=0, description="Finished workflows kept per outcome (succeeded, failed).")

    @field_validator("schedules")
    @classmethod
    def _cron(cls, schedules: list[str]) -> list[str]:
        for schedule in schedules:
            fields = schedule.split()
            if schedule in _CRON_MACROS or schedule.startswith("@every "):
                continue
            if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
                raise ValueError(
                    f"schedule {schedule!r} is not a cron expression: write 5 fields "
                    "(minute hour day-of-month month day-of-week, e.g. '0 */4 * * *') or a macro like @hourly"
                )
        return schedules


class ClusterConfig(_Section):
    namespace: str = Field("openforge", description="Kubernetes namespace of the workflows.")
    image: str = Field("openforge/runtime:0.1.0", description="Image of the prepare, rollout, score, train and commit steps.")
    proxy_image: str = Field("openforge/proxy:0.1.0", description="Image of the recording-proxy sidecar.")
    engine_image: str = Field("openforge/engine:0.1.0", description="Image of the serve step (the inference engine).")
    trainer_image: str | None = Field(
        None,
        description="Image of the train step. Unset: `image` for trainer.backend cpu, `openforge/trainer` at "
        "`image`'s registry and tag for trainer.backend verl (images/trainer).",
    )
    rollout_image: str | None = Field(
        None,
        description="Image of the rollout pods' main container (harness and runner). Unset: `image` for the "
        "reference harness, else `<image's repository>-<harness>` at `image`'s tag (images/harness/<name>).",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    service_account: str = Field(
        "openforge-workflow", description="Service account of the steps (and of Argo's executor in rollout pods)."
    )
    storage_secret: str = Field(
        "openforge-storage",
        description="Secret with the store's credentials (AWS_ACCESS_KEY_ID, ...), given to every step but the rollouts.",
    )
    resources: StepResources = Field(default_factory=StepResources)
    gpu_resource: str = Field("nvidia.com/gpu", description="Extended resource name GPUs are requested as.")
    gpu_nodes: Placement = Field(default_factory=Placement, description="Where serve and train run.")
    cpu_nodes: Placement = Field(default_factory=Placement, description="Where prepare, rollouts, score and commit run.")
    gpu_semaphore: ConfigMapKey = Field(
        default_factory=lambda: ConfigMapKey(config_map="openforge-semaphores", key="gpu"),
        description="Argo semaphore serve and train hold: its value is how many GPU steps run at once.",
    )
    artifact_repository: ConfigMapKey = Field(
        default_factory=lambda: ConfigMapKey(config_map="artifact-repositories", key="openforge"),
        description="Argo artifact repository (bucket, endpoint, credentials) the rollout artifacts go through.",
    )
    rollout_startup_s: float = Field(
        300.0,
        gt=0,
        description="Added to a rollout's time limit and verifier timeout for its pod deadline: scheduling, image pull, start-up.",
    )
    ttl_after_success_s: int = Field(86400, ge=0, description="A succeeded workflow is deleted this long after it ends.")
    ttl_after_failure_s: int = Field(604800, ge=0, description="A failed workflow is kept this long, for debugging.")
    run_as_user: int = Field(1000, ge=1, description="Non-root user id every pod runs as (the images' user).")
    argo_server: str | None = Field(
        None, description="Argo Server URL for deploy/submit/status (env ARGO_SERVER takes precedence)."
    )
    cron: CronConfig = Field(default_factory=CronConfig)
    train_shared_claim: str | None = Field(
        None,
        description="PersistentVolumeClaim (ReadWriteMany) every node of a multi-node train step mounts: veRL's "
        "workers load the checkpoint from it and save their shards to it. Needed when trainer.nnodes > 1 "
        "(docs/trainer.md, 'Training across nodes').",
    )
    rayjob_service_account: str = Field(
        "openforge-rayjob",
        description="Service account of the train step when it creates a KubeRay RayJob (trainer.nnodes > 1): "
        "the one that may create RayJobs, which no other step's pod may.",
    )

    def train_image(self, backend: str) -> str:
        """The train step's image: ``trainer_image``, else the runtime (cpu) or its trainer sibling (verl)."""
        if self.trainer_image is not None:
            return self.trainer_image
        return self.image if backend == "cpu" else sibling_image(self.image, name="trainer")

    def harness_image(self, harness: str) -> str:
        """The rollout pods' image: ``rollout_image``, else the runtime (reference) or its harness sibling."""
        if self.rollout_image is not None:
            return self.rollout_image
        return self.image if harness == "reference" else sibling_image(self.image, suffix=f"-{harness}")

    @field_validator("namespace", "service_account", "storage_secret", "rayjob_service_account")
    @classmethod
    def _names(cls, value: str) -> str:
        return _k8s_name(value, "name")

    @field_validator("train_shared_claim")
    @classmethod
    def _claim(cls, value: str | None) -> str | None:
        return None if value is None else _k8s_name(value, "PersistentVolumeClaim")

    @field_validator("image", "proxy_image", "engine_image", "trainer_image", "rollout_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"image {value!r} must be a non-empty reference without spaces, e.g. 'openforge/runtime:0.1.0'")
        return value
