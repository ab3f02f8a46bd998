"""The rollout pod: the harness and its runner in the main container, the recording proxy
as a sidecar; and where that proxy sends its calls (the serve step, or a recording's
endpoint teacher). pipelines/iteration.py places it in the generate DAG."""

from __future__ import annotations

from hera.workflows import Container, Env, S3Artifact, SecretEnv, UserContainer
from hera.workflows import models as m

from components.core.config import ExperimentConfig
from components.core.storage import RunLayout, run_layout
from components.proxy.cli import UPSTREAM_KEY_ENV
from pipelines import pod_specs
from pipelines.steps import STEPS
from pipelines.steps._spec import ITERATION, Artifact
from pipelines.teacher_egress import teacher_egress_labels
from pipelines.steps.rollout import PROXY_PORT, TRAJECTORY_DIR, WORK_DIR, WORK_VOLUME

SERVE_ADDRESS = "{{inputs.parameters.serve-address}}"
TEACHER_URL_PARAMETER = "teacher-url"
TEACHER_URL = "{{workflow.parameters.%s}}" % TEACHER_URL_PARAMETER
# Writable paths of the rollout containers, whose root file systems are read-only.
HOME_DIR = "/home/openforge"


def _proxy_sidecar(config: ExperimentConfig) -> UserContainer:
    """The recording proxy: reaches the serve step (the policy, or a recording's checkpoint
    teacher), or a recording's endpoint teacher, and writes calls to the shared volume. Its one secret is that teacher's key, from a Secret,
    given to this container alone."""
    teacher = config.endpoint_teacher
    env: list[Env | SecretEnv] = [*pod_specs.config_env()]
    if config.served_teacher is not None:
        # The serve step serves the teacher's checkpoint: recorded as text, as an endpoint's,
        # so SFT tokenizes it with the student's template whatever the teacher's tokenizer.
        upstream, mode = f"http://{SERVE_ADDRESS}", ["--teacher"]
    elif teacher is None:
        upstream, mode = f"http://{SERVE_ADDRESS}", [
            "--training",
            # Only when not the default: the manifests of temperature-1 runs stay as they were.
            *(["--temperature", str(config.algorithm.temperature)] if config.algorithm.temperature != 1.0 else []),
            # Per iteration: a rollout id recurs every iteration and must not redraw the same numbers.
            *(["--sampling-seed", f"{config.seed}/{ITERATION}"] if config.rollout.seeded_sampling else []),
        ]
    else:
        # The URL comes in as the rollout's serve-address, from a workflow parameter: data, which
        # the local executor never takes for one of the pod's own ports (a teacher on this
        # machine's loopback), and which a rerun from the Argo UI may point elsewhere.
        upstream, mode = SERVE_ADDRESS, ["--teacher", "--teacher-api", teacher.api, "--served-model", teacher.model]
        if teacher.api_key_env is not None:
            env.append(SecretEnv(name=UPSTREAM_KEY_ENV, secret_name=teacher.secret, secret_key=teacher.api_key_env))
    return UserContainer(
        name="proxy",
        image=config.cluster.proxy_image,
        image_pull_policy=config.cluster.image_pull_policy,
        command=[
            "openforge", "proxy", "--upstream", upstream, "--out", TRAJECTORY_DIR, "--port", str(PROXY_PORT),
            *mode, *_parser_flags(config),
        ],  # fmt: skip
        env=env,
        ports=[m.ContainerPort(name="proxy", container_port=PROXY_PORT)],
        volume_mounts=[m.VolumeMount(name=WORK_VOLUME, mount_path=WORK_DIR), m.VolumeMount(name="proxy-tmp", mount_path="/tmp")],
        resources=pod_specs.resources(config.cluster, "proxy").build(),
        security_context=pod_specs.container_security(read_only_root=True),
    )


def _parser_flags(config: ExperimentConfig) -> list[str]:
    """The engine's answer formats, so the proxy's token path reads answers as the engine does."""
    vllm = config.engine.vllm
    flags = ["--tool-call-parser", vllm.tool_call_parser or "none"]
    return flags + (["--reasoning-parser", vllm.reasoning_parser] if vllm.reasoning_parser else [])


def _raw_s3(artifact: Artifact, layout: RunLayout) -> S3Artifact:
    # Key-only artifacts: bucket, endpoint and credentials come from the artifact repository,
    # so the pod itself never holds them. `archive: none` keeps the object a plain file.
    optional = {"optional": True} if artifact.optional else {}
    return S3Artifact(
        name=artifact.name,
        path=artifact.path,
        key=artifact.key(layout),
        archive=m.ArchiveStrategy(none=m.NoneStrategy()),
        **optional,
    )


def rollout_template(config: ExperimentConfig) -> Container:
    """One pod per rollout: harness + runner in the main container, the recording proxy as a sidecar.

    Holds no storage, model or Kubernetes credentials: the task comes in and the outcome
    and trajectory (with its images) go out as artifacts, which Argo's own init and wait containers (or the
    local executor) move; the service-account token goes to those containers only.
    """
    cluster = config.cluster
    spec, layout = STEPS["rollout"], run_layout(config)
    mounts = {WORK_VOLUME: WORK_DIR, "tmp": "/tmp", "home": HOME_DIR}
    return Container(
        name="rollout",
        image=cluster.harness_image(config.harness.name),
        image_pull_policy=cluster.image_pull_policy,
        command=spec.command(),
        env=pod_specs.config_env(),
        inputs=pod_specs.step_inputs(spec, layout),
        outputs=[_raw_s3(a, layout) for a in spec.artifacts_out],
        volume_mounts=[m.VolumeMount(name=name, mount_path=path) for name, path in mounts.items()],
        volumes=[pod_specs.empty_dir(name) for name in (*mounts, "proxy-tmp")],
        sidecars=[_proxy_sidecar(config)],
        resources=pod_specs.resources(cluster, "rollout"),
        security_context=pod_specs.container_security(read_only_root=True),
        # The whole pod's life, start-up included (computed per task by prepare).
        active_deadline_seconds="{{inputs.parameters.deadline}}",
        automount_service_account_token=False,
        executor=m.ExecutorConfig(service_account_name=cluster.service_account),
        labels={**pod_specs.step_labels("rollout"), **teacher_egress_labels(config)},
        retry_strategy=pod_specs.retry_infrastructure(),
        **pod_specs.placement(cluster, "rollout"),
    )
