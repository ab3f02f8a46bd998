"""One RL iteration as an Argo WorkflowTemplate, defined with Hera from an ExperimentConfig.

    prepare -> serve (daemon) -> rollout x N (withParam) -> score -> train -> commit

Every container runs ``openforge step <name> ...`` with the config YAML in env
``OPENFORGE_CONFIG_YAML``. The compiled manifest (``pipelines/compile.py``) is the single
source of truth: Argo runs it on a cluster and the local executor runs the very same
document, so the names, ports, paths and keys below are a contract with the executor
(docs/architecture.md lists them).
"""

from __future__ import annotations

import yaml
from hera.workflows import (
    DAG,
    Container,
    EmptyDirVolume,
    Env,
    Parameter,
    RetryStrategy,
    S3Artifact,
    SecretEnvFrom,
    Task,
    UserContainer,
    WorkflowTemplate,
)
from hera.workflows import models as m

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.storage import RunLayout

ENTRYPOINT = "iteration"
SERVE_PORT = 8000
PROXY_PORT = 8100
ROLLOUTS_FILE = "/tmp/rollouts.json"
# The rollout pod's shared emptyDir: the proxy sidecar writes trajectories into it and the
# runner reads them there, so both containers mount it at the same path.
WORK_VOLUME = "work"
WORK_DIR = "/work"
TASK_DIR = f"{WORK_DIR}/task"
TRAJECTORY_DIR = f"{WORK_DIR}/trajectories"
OUT_DIR = f"{WORK_DIR}/out"

ITERATION = "{{workflow.parameters.iteration}}"
CONFIG_TEXT = "{{workflow.parameters.config}}"
ROLLOUT_ID = "{{inputs.parameters.rollout-id}}"
TASK_ID = "{{inputs.parameters.task-id}}"
SERVE_ADDRESS = "{{inputs.parameters.serve-address}}"

# Keys are deterministic, so a retried step overwrites what it wrote before: retries are safe.
_RETRY_ON_ERROR = RetryStrategy(limit=2, retry_policy="OnError")
_HEALTH_PATH = "/health"


def template_name(config: ExperimentConfig) -> str:
    """The WorkflowTemplate's name (config names are at most 40 characters, so this fits in 63)."""
    return f"{config.name}-{ENTRYPOINT}"


def config_yaml(config: ExperimentConfig) -> str:
    """The config as the YAML text every step receives: complete (defaults spelled out) and stable."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


def _step_command(step: str, *args: str) -> list[str]:
    return ["openforge", "step", step, "--iteration", ITERATION, *args]


def _config_env() -> list[Env]:
    return [Env(name=CONFIG_ENV, value=CONFIG_TEXT)]


def _storage_credentials(config: ExperimentConfig) -> list[SecretEnvFrom]:
    return [SecretEnvFrom(name=config.cluster.storage_secret)]


def _health_probe(port: int) -> m.Probe:
    return m.Probe(http_get=m.HTTPGetAction(path=_HEALTH_PATH, port=port))


def _storage_step(config: ExperimentConfig, step: str, *args: str, **template: object) -> Container:
    """A step that reads and writes the store itself (everything but the rollout pod)."""
    return Container(
        name=step,
        image=config.cluster.image,
        command=_step_command(step, *args),
        env=_config_env(),
        env_from=_storage_credentials(config),
        **template,
    )


def _prepare_template(config: ExperimentConfig) -> Container:
    """Picks this iteration's tasks, freezes them in the store, emits the rollout list."""
    return _storage_step(
        config,
        "prepare",
        "--out",
        ROLLOUTS_FILE,
        outputs=[Parameter(name="rollouts", value_from=m.ValueFrom(path=ROLLOUTS_FILE))],
        retry_strategy=_RETRY_ON_ERROR,
    )


def _serve_template(config: ExperimentConfig) -> Container:
    """The inference engine on this iteration's checkpoint; a daemon, so the DAG moves on once ready."""
    return Container(
        name="serve",
        image=config.cluster.engine_image,
        command=_step_command("serve", "--host", "0.0.0.0", "--port", str(SERVE_PORT)),
        env=_config_env(),
        env_from=_storage_credentials(config),
        daemon=True,
        ports=[m.ContainerPort(name="http", container_port=SERVE_PORT)],
        readiness_probe=_health_probe(SERVE_PORT),
    )


def _proxy_sidecar(config: ExperimentConfig) -> UserContainer:
    return UserContainer(
        name="proxy",
        image=config.cluster.proxy_image,
        command=[
            "openforge",
            "proxy",
            "--upstream",
            f"http://{SERVE_ADDRESS}",
            "--out",
            TRAJECTORY_DIR,
            "--port",
            str(PROXY_PORT),
            "--training",
        ],
        env=_config_env(),
        ports=[m.ContainerPort(name="proxy", container_port=PROXY_PORT)],
        volume_mounts=[m.VolumeMount(name=WORK_VOLUME, mount_path=WORK_DIR)],
    )


def _raw_s3(name: str, path: str, key: str, **kwargs: object) -> S3Artifact:
    # Key-only artifacts: bucket, endpoint and credentials come from the artifact repository,
    # so the pod itself never holds them. `archive: none` keeps the object a plain file.
    return S3Artifact(name=name, path=path, key=key, archive=m.ArchiveStrategy(none=m.NoneStrategy()), **kwargs)


def _rollout_template(config: ExperimentConfig) -> Container:
    """One pod per rollout: harness + runner in the main container, the recording proxy as a sidecar.

    Holds no storage or model credentials: the task comes in and the outcome and trajectory
    go out as artifacts, which the workflow controller (or the local executor) moves.
    """
    layout = RunLayout(config.name)
    trajectory_file = f"{TRAJECTORY_DIR}/{ROLLOUT_ID}.jsonl"
    return Container(
        name="rollout",
        image=config.cluster.image,
        command=_step_command(
            "rollout",
            "--rollout-id",
            ROLLOUT_ID,
            "--task-dir",
            TASK_DIR,
            "--proxy-url",
            f"http://127.0.0.1:{PROXY_PORT}",
            "--trajectory",
            trajectory_file,
            "--out",
            OUT_DIR,
        ),
        env=_config_env(),
        inputs=[
            Parameter(name="rollout-id"),
            Parameter(name="task-id"),
            Parameter(name="serve-address"),
            S3Artifact(name="task", path=TASK_DIR, key=layout.task(TASK_ID)),
        ],
        outputs=[
            _raw_s3("outcome", f"{OUT_DIR}/outcome.json", layout.outcome(ITERATION, ROLLOUT_ID)),
            # A harness that never called the model leaves no trajectory: that is an outcome, not an error.
            _raw_s3("trajectory", trajectory_file, layout.trajectory(ITERATION, ROLLOUT_ID), optional=True),
        ],
        volumes=[EmptyDirVolume(name=WORK_VOLUME, mount_path=WORK_DIR)],
        sidecars=[_proxy_sidecar(config)],
        # Only infrastructure errors (pod lost, evicted) are retried; a failed agent is a result.
        retry_strategy=RetryStrategy(limit=1, retry_policy="OnError"),
    )


def _dag(config: ExperimentConfig, steps: dict[str, Container]) -> DAG:
    rollout_args = {
        "rollout-id": "{{item.rollout_id}}",
        "task-id": "{{item.task_id}}",
        # ip and port in one value: the local executor maps the pair onto serve's loopback port.
        "serve-address": f"{{{{tasks.serve.ip}}}}:{SERVE_PORT}",
    }
    tasks = [
        Task(name="prepare", template=steps["prepare"]),
        Task(name="serve", template=steps["serve"], depends="prepare"),
        Task(
            name="rollout",
            template=steps["rollout"],
            depends="prepare && serve",
            with_param="{{tasks.prepare.outputs.parameters.rollouts}}",
            arguments=[Parameter(name=k, value=v) for k, v in rollout_args.items()],
        ),
        # The runner records every agent failure as an outcome and then exits 0, so a failed
        # rollout pod means infrastructure trouble: the iteration stops, to rerun from its last commit.
        Task(name="score", template=steps["score"], depends="rollout"),
        Task(name="train", template=steps["train"], depends="score"),
        Task(name="commit", template=steps["commit"], depends="train"),
    ]
    # Argo counts every running pod under the DAG against `parallelism`, the serve daemon
    # included: one more than the rollout concurrency lets exactly `concurrency` rollouts run.
    return DAG(name=ENTRYPOINT, tasks=tasks, parallelism=config.rollout.concurrency + 1)


def build_iteration_template(config: ExperimentConfig) -> WorkflowTemplate:
    """The iteration WorkflowTemplate; submit it with parameters `iteration` (and optionally `config`)."""
    # score, train and commit take nothing but the iteration: what they need is in the store.
    later = (_storage_step(config, step, retry_strategy=_RETRY_ON_ERROR) for step in ("score", "train", "commit"))
    steps = {t.name: t for t in (_prepare_template(config), _serve_template(config), _rollout_template(config), *later)}
    return WorkflowTemplate(
        name=template_name(config),
        namespace=config.cluster.namespace,
        labels={"app.kubernetes.io/part-of": "openforge", "openforge.dev/experiment": config.name},
        entrypoint=ENTRYPOINT,
        service_account_name=config.cluster.service_account,
        arguments=[
            Parameter(name="iteration", value="0", description="RL iteration: serves checkpoint K, trains K+1."),
            Parameter(name="config", value=config_yaml(config), description="The experiment config (YAML)."),
        ],
        pod_gc=m.PodGC(strategy="OnWorkflowSuccess"),
        templates=[_dag(config, steps), *steps.values()],
    )
