"""argo/cluster: every core manifest is valid Kubernetes (strict), complete, and agrees with the config's defaults."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.core.cluster_config import ClusterConfig
from components.core.config import load_config

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = ROOT / "argo" / "cluster"
KUSTOMIZATION = CLUSTER_DIR / "kustomization.yaml"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, doc)
        for path in sorted(CLUSTER_DIR.glob("*.yaml"))
        if path != KUSTOMIZATION
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def _find(kind: str, name: str) -> dict[str, Any]:
    found = [doc for _, doc in _documents() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert found, f"argo/cluster has no {kind} {name!r}"
    return found[0]


@pytest.mark.parametrize(("file", "doc"), _documents(), ids=lambda v: v if isinstance(v, str) else v["metadata"]["name"])
def test_every_core_manifest_passes_kubernetes_validate_strict(file: str, doc: dict[str, Any]) -> None:
    import kubernetes_validate

    # The schemas ship inside the package: this needs no network.
    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_strict_validation_can_fail() -> None:
    import kubernetes_validate

    doc = _find("Deployment", "minio")
    doc["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError, match="imagePullPolcy"):
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_the_kubernetes_validate_command_agrees() -> None:
    files = [str(p) for p in sorted(CLUSTER_DIR.glob("*.yaml")) if p != KUSTOMIZATION]
    command = [str(Path(sys.executable).with_name("kubernetes-validate")), "--strict", "--quiet", *files]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_kustomization_lists_every_manifest_and_only_those() -> None:
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text())
    files = sorted(p.name for p in CLUSTER_DIR.glob("*.yaml") if p != KUSTOMIZATION)
    assert sorted(kustomization["resources"]) == files
    assert kustomization["namespace"] == ClusterConfig().namespace


def test_every_object_lives_in_the_experiments_namespace() -> None:
    namespace = ClusterConfig().namespace
    for file, doc in _documents():
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == namespace, (file, doc["metadata"]["name"])
    assert _find("Namespace", namespace)


def test_the_config_defaults_name_objects_that_exist() -> None:
    cluster = ClusterConfig()
    assert _find("ServiceAccount", cluster.service_account)
    assert _find("ServiceAccount", cluster.rayjob_service_account)
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(_find("Secret", cluster.storage_secret)["stringData"])
    semaphores = _find("ConfigMap", cluster.gpu_semaphore.config_map)
    assert int(semaphores["data"][cluster.gpu_semaphore.key]) >= 1
    repositories = _find("ConfigMap", cluster.artifact_repository.config_map)
    assert cluster.artifact_repository.key in repositories["data"]


def test_the_workflow_account_may_report_outputs_and_nothing_more() -> None:
    role = _find("Role", "openforge-workflow")
    assert role["rules"] == [{"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}]
    binding = _find("RoleBinding", "openforge-workflow")
    assert binding["subjects"][0]["name"] == ClusterConfig().service_account


def test_only_the_rayjob_account_may_create_ray_jobs() -> None:
    """A RayJob runs any image it names: the account whose token Argo's executor holds in
    rollout pods must not create one."""
    role = _find("Role", "openforge-rayjob")
    assert {"apiGroups": ["ray.io"], "resources": ["rayjobs"], "verbs": ["create", "get", "list", "watch"]} in role["rules"]
    assert _find("RoleBinding", "openforge-rayjob")["subjects"][0]["name"] == ClusterConfig().rayjob_service_account
    others = [doc for _, doc in _documents() if doc["kind"] == "Role" and doc["metadata"]["name"] != "openforge-rayjob"]
    assert others and not any("ray.io" in rule["apiGroups"] for doc in others for rule in doc["rules"])


def test_the_artifact_repository_is_the_example_configs_store() -> None:
    repository = yaml.safe_load(_find("ConfigMap", "artifact-repositories")["data"]["openforge"])["s3"]
    example = load_config(ROOT / "examples" / "cluster.yaml")
    assert example.storage.uri == f"s3://{repository['bucket']}"
    host = repository["endpoint"].split(":")[0]
    assert example.storage.endpoint_url == f"http://{repository['endpoint']}" and host.startswith("minio.")
    for key in ("accessKeySecret", "secretKeySecret"):
        assert repository[key]["name"] == ClusterConfig().storage_secret
    mlflow = _find("Service", "mlflow")
    assert example.tracking.uri.endswith(f":{mlflow['spec']['ports'][0]['port']}")
