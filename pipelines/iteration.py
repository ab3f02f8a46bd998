"""One RL iteration as an Argo WorkflowTemplate, defined with Hera from an ExperimentConfig.

    prepare -> generate [serve (daemon) -> rollout x N (withParam)] -> score -> train -> commit
    onExit: record-status

With on-policy distillation (``algorithm.distillation``) a teach sub-DAG runs between score
and train: teach [serve-teacher (daemon) -> distill], the teacher scoring the batch that
train then builds again and trains on (components/trainer/distill_step.py).

With overlapped iterations (``algorithm.max_staleness: 1``) a second generate,
``generate-next``, runs iteration K+1's rollouts on checkpoint K as soon as K's have ended,
while score, train and commit of K run beside it (docs/trainer.md, "Overlapped iterations").

An evaluation (``openforge eval``, ``config.evaluation`` set) is the same DAG with report
in place of train and commit (``build_eval_workflow``).

Every container runs ``openforge step <name> ...`` with the config YAML in env
``OPENFORGE_CONFIG_YAML``; its command, inputs and outputs come from the step's spec
(``pipelines/steps/``), and this module adds only the pod around them (image, volumes,
ports, probes, placement, retries). prepare resolves the iteration (``next`` or a number) against
the run's state in the store and says whether anything is left to do; the later steps
take the resolved number from it. serve and the rollouts sit in their own sub-DAG so that
Argo stops the engine, and frees its GPU, before train starts. The compiled manifest
(``pipelines/compile.py``) is the single source of truth: Argo runs it on a cluster and
the local executor runs the very same document, so the names, ports, paths and keys
are a contract with the executor (docs/architecture.md lists them).
"""

from __future__ import annotations

from typing import Any

import yaml
from hera.workflows import (
    DAG,
    Container,
    Parameter,
    Resource,
    SecretEnvFrom,
    Task,
    Workflow,
    WorkflowTemplate,
)
from hera.workflows import models as m

from components.core.config import ExperimentConfig
from components.core.storage import run_layout
from pipelines import pod_specs
from pipelines.ray_job import ray_job_template
from pipelines.rollout_pod import TEACHER_URL, TEACHER_URL_PARAMETER, rollout_template
from pipelines.steps import STEPS
from pipelines.steps._spec import ITERATION, input_value
from pipelines.steps.distill import TEACHER_ADDRESS
from pipelines.steps.prepare import GENERATE_NEXT, NEXT, STOP_AT
from pipelines.steps.serve import HEALTH_PATH
from pipelines.steps.serve import PORT as SERVE_PORT

ENTRYPOINT = "iteration"
# An evaluation is one iteration: its keys sit under <name>/evals/<id>/iterations/0/.
EVAL_ITERATION = 0
GENERATE = "generate"
TEACH = "teach"
SERVE_TEACHER = "serve-teacher"
EXIT_HANDLER = "exit-handler"

_PREPARED = "{{tasks.prepare.outputs.parameters.%s}}"


def template_name(config: ExperimentConfig) -> str:
    """The WorkflowTemplate's name (config names are at most 40 characters, so this fits in 63)."""
    return f"{config.name}-{ENTRYPOINT}"


def config_yaml(config: ExperimentConfig) -> str:
    """The config as the YAML text every step receives: complete (defaults spelled out) and stable."""
    # `evaluation` only in an evaluation's config, `sft`, `teacher` and `algorithm.distillation`
    # only where set: a training config's text (and manifest) stays as it was.
    unset: dict[str, Any] = {name: True for name in ("evaluation", "sft", "teacher") if getattr(config, name) is None}
    if config.evaluation is not None and not config.evaluation.recording:
        unset["evaluation"] = {"recording"}  # an evaluation's text as it was before recordings
    if config.algorithm.distillation is None:
        unset["algorithm"] = {"distillation"}
    dumped = config.model_dump(mode="json", exclude=unset or None)
    return yaml.safe_dump(dumped, sort_keys=False)


def _health_probe(port: int) -> m.Probe:
    return m.Probe(http_get=m.HTTPGetAction(path=HEALTH_PATH, port=port))


def _iteration_input() -> Parameter:
    return Parameter(name="iteration")


def _stop_at_input() -> Parameter:
    # 0: no end (the CronWorkflow); a bounded run passes its length so nothing is sampled past it.
    return Parameter(name=STOP_AT, default="0")


def _step_image(config: ExperimentConfig, step: str) -> str:
    cluster = config.cluster
    if step in ("serve", SERVE_TEACHER):
        return cluster.engine_image
    if step in ("train", "sft"):
        return cluster.train_image(config.trainer.backend)
    return cluster.image


def storage_step(config: ExperimentConfig, step: str, name: str = "", sized_as: str = "", **template: Any) -> Container:
    """A step that reads and writes the store itself (everything but the rollout pod).

    ``name`` is the template's name where it is not the step's (the exit handler); the
    pod's labels, placement and image follow the template.
    """
    cluster = config.cluster
    spec, name = STEPS[step], name or step
    settings: dict[str, Any] = {
        "inputs": pod_specs.step_inputs(spec, run_layout(config)),
        "labels": pod_specs.step_labels(name),
        "retry_strategy": pod_specs.retry_any(),
        **pod_specs.placement(cluster, name),
    }
    if name in pod_specs.GPU_STEPS:
        settings.update(synchronization=pod_specs.gpu_semaphore(cluster), retry_strategy=pod_specs.retry_infrastructure())
    settings.update(template)
    return Container(
        name=name,
        image=_step_image(config, name),
        image_pull_policy=cluster.image_pull_policy,
        command=spec.command(),
        env=pod_specs.config_env(),
        env_from=[SecretEnvFrom(name=cluster.storage_secret)],
        resources=pod_specs.resources(cluster, sized_as or name),
        security_context=pod_specs.container_security(read_only_root=False),
        **settings,
    )


def _prepare_template(config: ExperimentConfig) -> Container:
    """Resolves the iteration against the run's state, freezes its tasks, lists the rollouts left."""
    spec = STEPS["prepare"]
    return storage_step(
        config,
        "prepare",
        outputs=[Parameter(name=o.name, value_from=m.ValueFrom(path=spec.output_path(o.name))) for o in spec.outputs],
        # A volume, so the folder is a path of the pod (the local executor maps it into the sandbox).
        volume_mounts=[m.VolumeMount(name="prepare-out", mount_path=spec.output_dir)],
        volumes=[pod_specs.empty_dir("prepare-out")],
    )


def _serve_template(config: ExperimentConfig) -> Container:
    """The inference engine on this iteration's checkpoint; a daemon, so the DAG moves on once ready."""
    return storage_step(
        config,
        "serve",
        daemon=True,
        ports=[m.ContainerPort(name="http", container_port=SERVE_PORT)],
        readiness_probe=_health_probe(SERVE_PORT),
    )


def _exit_handler(config: ExperimentConfig) -> Container:
    """Runs after every workflow run, however it ended: records the ending in MLflow."""
    return storage_step(config, "record-status", name=EXIT_HANDLER, sized_as="commit")


def _final_steps(config: ExperimentConfig, evaluation: bool) -> tuple[str, ...]:
    """What follows score, in order: an evaluation trains and commits nothing; on-policy
    distillation has the teacher score the batch first."""
    if evaluation:
        return ("report",)
    return (TEACH, "train", "commit") if config.algorithm.distillation is not None else ("train", "commit")


def _teach_templates(config: ExperimentConfig) -> list[Any]:
    """The teach sub-DAG (serve-teacher daemon -> distill) and its two steps. A sub-DAG, so Argo
    stops the teacher, and frees its GPU, before train starts."""
    iteration = Parameter(name="iteration", value=ITERATION)
    address = f"{{{{tasks.{SERVE_TEACHER}.ip}}}}:{SERVE_PORT}"
    dag = DAG(
        name=TEACH,
        inputs=[_iteration_input()],
        tasks=[
            Task(name=SERVE_TEACHER, template=SERVE_TEACHER, arguments=[iteration]),
            Task(
                name="distill",
                template="distill",
                depends=SERVE_TEACHER,
                arguments=[iteration, Parameter(name=TEACHER_ADDRESS, value=address)],
            ),
        ],
    )
    teacher = storage_step(
        config,
        SERVE_TEACHER,
        sized_as="serve",
        daemon=True,
        ports=[m.ContainerPort(name="http", container_port=SERVE_PORT)],
        readiness_probe=_health_probe(SERVE_PORT),
    )
    return [dag, teacher, storage_step(config, "distill", sized_as="score")]


def _iteration_dag(config: ExperimentConfig, evaluation: bool) -> DAG:
    """prepare -> generate -> score, then train -> commit; an evaluation ends in report instead."""
    pending = f"{_PREPARED % 'pending'} == true"
    iteration = Parameter(name="iteration", value=_PREPARED % "iteration")
    prepare_args = [Parameter(name="iteration", value=ITERATION), Parameter(name=STOP_AT, value=input_value(STOP_AT))]
    tasks = [
        Task(name="prepare", template="prepare", arguments=prepare_args),
        Task(
            name=GENERATE,
            template=GENERATE,
            depends="prepare",
            when=f"{_PREPARED % 'generate'} == true",
            arguments=[iteration, Parameter(name="rollouts", value=_PREPARED % "rollouts")],
        ),
        # Only infrastructure trouble fails a rollout pod (the runner records every agent
        # failure as an outcome and exits 0), so a failed generate stops the iteration, to be
        # resumed from the store by the next run.
        Task(name="score", template="score", depends=GENERATE, when=pending, arguments=[iteration]),
    ]
    finish = _final_steps(config, evaluation)
    tasks += [
        Task(name=name, template=name, depends=after, when=pending, arguments=[iteration])
        for name, after in zip(finish, ("score", *finish))
    ]
    if config.algorithm.max_staleness and not evaluation:
        # After generate, so one engine serves at a time and rollouts never exceed the concurrency.
        tasks.append(
            Task(
                name=GENERATE_NEXT,
                template=GENERATE,
                depends=GENERATE,
                when=f"{_PREPARED % 'next-generate'} == true",
                arguments=[
                    Parameter(name="iteration", value=_PREPARED % "next-iteration"),
                    Parameter(name="rollouts", value=_PREPARED % "next-rollouts"),
                ],
            )
        )
    return DAG(name=ENTRYPOINT, inputs=[_iteration_input(), _stop_at_input()], tasks=tasks)


def _serve_tasks(config: ExperimentConfig) -> list[str]:
    """The generate DAG's serve tasks: ``serve``, or ``serve-0`` .. ``serve-<N-1>`` for engine replicas;
    none where an endpoint teacher answers."""
    if config.endpoint_teacher is not None:
        return []
    replicas = config.engine.replicas
    return ["serve"] if replicas == 1 else [f"serve-{index}" for index in range(replicas)]


def _generate_dag(config: ExperimentConfig) -> DAG:
    iteration = Parameter(name="iteration", value=ITERATION)
    serves = _serve_tasks(config)
    rollout_args = {
        "rollout-id": "{{item.rollout_id}}",
        "task-id": "{{item.task_id}}",
        "deadline": "{{item.deadline_s}}",
        # ip and port in one value: the local executor maps the pair onto serve's loopback port.
        # Replicas: one pair each, comma-separated; the proxy pins each session to one of them.
        "serve-address": ",".join(f"{{{{tasks.{name}.ip}}}}:{SERVE_PORT}" for name in serves),
    }
    teacher = config.endpoint_teacher
    if teacher is not None:
        rollout_args["serve-address"] = TEACHER_URL
    tasks = [
        *(Task(name=name, template="serve", arguments=[iteration]) for name in serves),
        Task(
            name="rollout",
            template="rollout",
            depends=" && ".join(serves) or None,
            with_param="{{inputs.parameters.rollouts}}",
            arguments=[iteration, *(Parameter(name=k, value=v) for k, v in rollout_args.items())],
        ),
    ]
    # Argo counts every running pod under the DAG against `parallelism`, the serve daemons
    # included: one more per replica than the rollout concurrency lets exactly `concurrency` rollouts run.
    return DAG(
        name=GENERATE,
        inputs=[_iteration_input(), Parameter(name="rollouts")],
        tasks=tasks,
        parallelism=config.rollout.concurrency + len(serves),
    )


def _final_step(config: ExperimentConfig, step: str) -> Container | Resource:
    if step == "train" and config.trainer.nnodes > 1:
        return ray_job_template(config)  # a Ray cluster of nnodes pods, not one pod
    # The report step is sized like commit: both read small files and talk to MLflow.
    return storage_step(config, step, sized_as="commit" if step == "report" else "")


def iteration_templates(config: ExperimentConfig) -> list[Any]:
    """Every template one iteration needs, DAGs first (a bounded workflow reuses them all).

    With ``config.evaluation`` set, the evaluation's: no train, no commit, no exit hook
    (it records training workflows), and a report step that summarizes the scores.
    """
    evaluation = config.evaluation is not None
    steps = [
        _prepare_template(config),
        *([_serve_template(config)] if _serve_tasks(config) else []),
        rollout_template(config),
        *(_final_step(config, step) for step in ("score", *_final_steps(config, evaluation)) if step != TEACH),
    ]
    if TEACH in _final_steps(config, evaluation):
        steps.extend(_teach_templates(config))
    if not evaluation:
        steps.append(_exit_handler(config))
    return [_iteration_dag(config, evaluation), _generate_dag(config), *steps]


def workflow_settings(config: ExperimentConfig) -> dict[str, Any]:
    """Spec fields every workflow of the experiment shares (the template and the bounded run)."""
    cluster = config.cluster
    return {
        "namespace": cluster.namespace,
        "labels": {pod_specs.PART_OF_LABEL: "openforge", pod_specs.EXPERIMENT_LABEL: config.name},
        "service_account_name": cluster.service_account,
        "artifact_repository_ref": m.ArtifactRepositoryRef(
            config_map=cluster.artifact_repository.config_map, key=cluster.artifact_repository.key
        ),
        "pod_metadata": m.Metadata(labels={pod_specs.EXPERIMENT_LABEL: config.name}),
        "security_context": pod_specs.pod_security(cluster),
        "synchronization": pod_specs.experiment_mutex(config.name),
        # Succeeded pods go at once (a run makes one per rollout); failed ones stay for `kubectl logs`.
        "pod_gc": m.PodGC(strategy="OnPodSuccess"),
        "ttl_strategy": m.TTLStrategy(
            seconds_after_success=cluster.ttl_after_success_s, seconds_after_failure=cluster.ttl_after_failure_s
        ),
        "on_exit": EXIT_HANDLER,
    }


def stop_at_parameter() -> Parameter:
    return Parameter(
        name=STOP_AT,
        value="0",
        description="Overlapped iterations sample no iteration >= this one (0: no end, as the CronWorkflow runs).",
    )


def config_parameter(config: ExperimentConfig) -> Parameter:
    return Parameter(name="config", value=config_yaml(config), description="The experiment config (YAML).")


def build_iteration_template(config: ExperimentConfig) -> WorkflowTemplate:
    """The iteration WorkflowTemplate; submit it with parameter `iteration` (a number or `next`)."""
    return WorkflowTemplate(
        name=template_name(config),
        entrypoint=ENTRYPOINT,
        arguments=[
            Parameter(
                name="iteration",
                value=NEXT,
                description="RL iteration to run: `next` (the first not yet committed) or a number.",
            ),
            stop_at_parameter(),
            config_parameter(config),
        ],
        templates=iteration_templates(config),
        **workflow_settings(config),
    )


def _teacher_parameter(config: ExperimentConfig) -> list[Parameter]:
    teacher = config.endpoint_teacher
    if teacher is None:
        return []
    return [Parameter(name=TEACHER_URL_PARAMETER, value=teacher.url, description="The teacher endpoint the proxies call.")]


def build_eval_workflow(config: ExperimentConfig) -> Workflow:
    """One evaluation (``config.evaluation``): the iteration's DAG ending in report, not train and commit."""
    if config.evaluation is None:
        raise ValueError("build_eval_workflow needs config.evaluation (openforge eval sets it)")
    settings = workflow_settings(config)
    # No experiment mutex (an evaluation only reads checkpoints and must not hold training up)
    # and no exit hook (it records how *training* workflows ended).
    for key in ("synchronization", "on_exit"):
        settings.pop(key)
    return Workflow(
        generate_name=f"{config.name}-eval-",
        entrypoint=ENTRYPOINT,
        arguments=[Parameter(name="iteration", value=str(EVAL_ITERATION)), config_parameter(config), *_teacher_parameter(config)],
        templates=iteration_templates(config),
        **settings,
    )
