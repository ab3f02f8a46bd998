"""trainer.nnodes > 1: the train step as a resource template creating a KubeRay RayJob."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import yaml
from tests.pipelines._manifests import cluster_example_config, template

from components.core.config import CONFIG_ENV, ExperimentConfig
from components.core.trainer_config import TRAIN_WORK_DIR_ENV
from pipelines.compile import compile_config
from pipelines.iteration import config_yaml
from pipelines.ray_job import CONFIG_EXPRESSION, FAILURE, OUTPUTS, SHARED_MOUNT, SUCCESS
from pipelines.run import RunError, run_experiment
from pipelines.validate import check_manifests, default_schema_path
from pipelines.validate._resources import resource_findings

CLAIM = "openforge-train-shared"


def _multinode(nnodes: int = 2, **cluster: object) -> ExperimentConfig:
    base = cluster_example_config().model_dump(mode="json", exclude={"evaluation"})
    base["trainer"].update(backend="verl", n_gpus_per_node=8, nnodes=nnodes)
    base["cluster"].update(train_shared_claim=CLAIM, **cluster)
    base["cluster"]["resources"]["train"]["gpu"] = 8
    return ExperimentConfig.model_validate(base)


def _template_doc(config: ExperimentConfig) -> dict:
    return next(doc for doc in compile_config(config) if doc["kind"] == "WorkflowTemplate")


def _as_argo_creates_it(manifest: str, config: ExperimentConfig, iteration: int) -> dict:
    """What Argo sends to the API server: the expression evaluated, the input filled in."""
    text = manifest.replace(CONFIG_EXPRESSION, json.dumps(config_yaml(config)))
    return yaml.safe_load(text.replace("{{inputs.parameters.iteration}}", str(iteration)))


def test_a_two_node_config_compiles_to_a_ray_job_that_passes_every_check() -> None:
    config = _multinode()
    docs = compile_config(config)
    assert check_manifests(docs, default_schema_path()) == []
    train = template(_template_doc(config), "train")
    assert "container" not in train
    resource = train["resource"]
    assert (resource["action"], resource["setOwnerReference"]) == ("create", True)
    assert (resource["successCondition"], resource["failureCondition"]) == (SUCCESS, FAILURE)
    assert train["serviceAccountName"] == config.cluster.rayjob_service_account != config.cluster.service_account
    assert [p["name"] for p in train["outputs"]["parameters"]] == list(OUTPUTS)
    assert "synchronization" in train  # it holds the GPU semaphore as the one-pod train step does


@pytest.mark.parametrize("nnodes", [2, 4])
def test_the_ray_job_runs_the_train_step_on_nnodes_pods_and_only_the_driver_gets_config_and_credentials(nnodes: int) -> None:
    config = _multinode(nnodes)
    job = _as_argo_creates_it(template(_template_doc(config), "train")["resource"]["manifest"], config, 3)
    # The one-pod train step's command, as the head's shell reads it.
    one_pod = template(_template_doc(cluster_example_config()), "train")["container"]["command"]
    expected = [arg.replace("{{inputs.parameters.iteration}}", "3") for arg in one_pod]
    assert shlex.split(job["spec"]["entrypoint"]) == expected == ["openforge", "step", "train", "--iteration", "3"]
    cluster = job["spec"]["rayClusterSpec"]
    (workers,) = cluster["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == nnodes - 1
    head = cluster["headGroupSpec"]["template"]["spec"]
    worker = workers["template"]["spec"]
    for pod in (head, worker):
        (container,) = pod["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert {"name": TRAIN_WORK_DIR_ENV, "value": SHARED_MOUNT} in container["env"]
        (claim,) = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert claim["persistentVolumeClaim"]["claimName"] == CLAIM
        assert {"name": claim["name"], "mountPath": SHARED_MOUNT} in container["volumeMounts"]
        assert pod["automountServiceAccountToken"] is False
    head_env = {e["name"]: e["value"] for e in head["containers"][0]["env"]}
    assert head_env[CONFIG_ENV] == config_yaml(config)  # byte for byte, new lines and quotes included
    assert head["containers"][0]["envFrom"] == [{"secretRef": {"name": config.cluster.storage_secret}}]
    assert CONFIG_ENV not in {e["name"] for e in worker["containers"][0]["env"]}
    assert "envFrom" not in worker["containers"][0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('"replicas"', '"replica"'), "workerGroupSpecs[0].replica: unknown field"),
        (('"generateName"', '"generateNam"'), "metadata.generateNam: unknown field"),
        (('"imagePullPolicy"', '"imagePullPolicies"'), "containers[0].imagePullPolicies: unknown field"),
        (('"backoffLimit": 0', '"backoffLimit": "none"'), "spec.backoffLimit: expected integer"),
        (('"kind": "RayJob"', '"kind": "RayJobs"'), "no schema to check it"),
        (('"apiVersion": "ray.io/v1"', '{"apiVersion": "ray.io/v1"'), "not YAML once Argo fills its tags"),
    ],
)
def test_the_strict_check_names_a_bad_field_of_the_ray_job(change: tuple[str, str], message: str) -> None:
    doc = _template_doc(_multinode())
    train = template(doc, "train")
    train["resource"]["manifest"] = train["resource"]["manifest"].replace(*change, 1)
    findings = [str(f) for f in resource_findings(doc)]
    assert len(findings) == 1 and message in findings[0], findings
    assert "spec.templates[" in findings[0] and ".resource.manifest" in findings[0]


def test_one_node_keeps_the_one_pod_train_step() -> None:
    train = template(_template_doc(cluster_example_config()), "train")
    assert "container" in train and "resource" not in train


@pytest.mark.parametrize(
    ("trainer", "cluster", "message"),
    [
        ({"backend": "cpu", "nnodes": 2}, {"train_shared_claim": CLAIM}, "trainer.nnodes 2 needs trainer.backend 'verl'"),
        ({"backend": "verl", "nnodes": 2}, {}, "set cluster.train_shared_claim"),
        ({"backend": "verl", "nnodes": 2}, {"train_shared_claim": "Shared_Volume"}, "is not a Kubernetes name"),
    ],
)
def test_a_multi_node_config_without_what_it_needs_is_refused(trainer: dict, cluster: dict, message: str) -> None:
    base = cluster_example_config().model_dump(mode="json", exclude={"evaluation"})
    base["trainer"].update(trainer)
    base["cluster"].update(cluster)
    base["cluster"]["resources"]["train"]["gpu"] = 1  # one worker per node: the pod fits, only the named problem is left
    with pytest.raises(ValueError, match=re.escape(message)):
        ExperimentConfig.model_validate(base)


def test_openforge_run_refuses_a_multi_node_config_before_any_step(tmp_path) -> None:
    with pytest.raises(RunError, match="trainer.nnodes 2 trains across nodes on a KubeRay RayJob.*trainer.nnodes: 1"):
        run_experiment(_multinode(), workdir=tmp_path)
    assert not any(tmp_path.iterdir())
