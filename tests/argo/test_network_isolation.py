"""The compiled rollout pod against argo/cluster's NetworkPolicies, and the credentials each pod holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.core.config import ExperimentConfig
from pipelines.compile import compile_config
from pipelines.iteration import SERVE_PORT
from pipelines.pod_specs import STEP_LABEL
from tests.pipelines._manifests import cluster_example_config, template

POLICIES = Path(__file__).resolve().parents[2] / "argo" / "cluster" / "network-policies.yaml"


def _policies() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(POLICIES.read_text()) if doc}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _pod_labels(doc: dict[str, Any], step: str) -> dict[str, str]:
    # What Argo puts on the pod: the workflow's podMetadata plus the template's metadata.
    return {**doc["spec"]["podMetadata"]["labels"], **template(doc, step)["metadata"]["labels"]}


def _template_doc() -> dict[str, Any]:
    return compile_config(cluster_example_config())[0]


def test_the_rollout_policy_selects_rollout_pods_and_nothing_else_of_the_workflow() -> None:
    doc, rollout = _template_doc(), _policies()["rollout"]
    assert _selects(rollout["spec"]["podSelector"], _pod_labels(doc, "rollout"))
    for step in ("prepare", "serve", "score", "train", "commit", "exit-handler"):
        assert not _selects(rollout["spec"]["podSelector"], _pod_labels(doc, step)), step
    assert set(rollout["spec"]["policyTypes"]) == {"Ingress", "Egress"} and rollout["spec"]["ingress"] == []


def test_rollout_pods_reach_their_serve_step_on_the_port_the_proxy_uses() -> None:
    doc = _template_doc()
    egress = _policies()["rollout"]["spec"]["egress"]
    to_serve = [rule for rule in egress if any(_selects(peer.get("podSelector", {}), _pod_labels(doc, "serve")) for peer in rule["to"])]
    assert len(to_serve) == 1 and to_serve[0]["ports"] == [{"protocol": "TCP", "port": SERVE_PORT}]
    serve_ports = [p["containerPort"] for p in template(doc, "serve")["container"]["ports"]]
    assert serve_ports == [SERVE_PORT]
    rollout_args = {p["name"]: p["value"] for p in _rollout_task(doc)["arguments"]["parameters"]}
    assert rollout_args["serve-address"] == f"{{{{tasks.serve.ip}}}}:{SERVE_PORT}"


def _rollout_task(doc: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in template(doc, "generate")["dag"]["tasks"] if t["name"] == "rollout")


def test_every_other_rollout_destination_is_dns_minio_or_the_api_server() -> None:
    policies = _policies()
    peers = [peer for rule in policies["rollout"]["spec"]["egress"] for peer in rule["to"]]
    kinds = sorted(
        "serve" if peer.get("podSelector", {}).get("matchLabels", {}).get(STEP_LABEL) == "serve"
        else "dns" if peer.get("namespaceSelector") and peer["podSelector"]["matchLabels"] == {"k8s-app": "kube-dns"}
        else "minio" if peer.get("podSelector", {}).get("matchLabels") == {"app.kubernetes.io/name": "minio"}
        else f"unexpected {peer}"
        for peer in peers
    )  # fmt: skip
    assert kinds == ["dns", "minio", "serve"]
    (apiserver,) = policies["rollout-apiserver"]["spec"]["egress"]
    assert [peer["ipBlock"]["cidr"].endswith("/32") for peer in apiserver["to"]] == [True]
    assert {p["port"] for p in apiserver["ports"]} == {443, 6443}


def test_serve_answers_rollout_pods_only() -> None:
    doc, serve = _template_doc(), _policies()["serve"]
    assert _selects(serve["spec"]["podSelector"], _pod_labels(doc, "serve"))
    (rule,) = serve["spec"]["ingress"]
    assert [_selects(peer["podSelector"], _pod_labels(doc, "rollout")) for peer in rule["from"]] == [True]
    assert rule["ports"] == [{"protocol": "TCP", "port": SERVE_PORT}]


def test_rollout_containers_hold_no_storage_model_or_kubernetes_credentials() -> None:
    rollout = template(_template_doc(), "rollout")
    assert rollout["automountServiceAccountToken"] is False
    assert rollout["executor"] == {"serviceAccountName": cluster_example_config().cluster.service_account}
    for container in (rollout["container"], *rollout["sidecars"]):
        assert "envFrom" not in container, container["name"]
        assert all("valueFrom" not in env for env in container["env"]), container["name"]
        assert [env["name"] for env in container["env"]] == ["OPENFORGE_CONFIG_YAML"], container["name"]
    volumes = rollout["volumes"]
    assert all(set(v) == {"name", "emptyDir"} for v in volumes), "only scratch volumes: no secret or projected token"
    # The artifacts name keys only: bucket, endpoint and keys stay in the artifact repository.
    for artifact in (*rollout["inputs"]["artifacts"], *rollout["outputs"]["artifacts"]):
        assert set(artifact["s3"]) == {"key"}


def test_the_config_the_rollout_pod_receives_holds_no_credential() -> None:
    doc = _template_doc()
    assert template(doc, "rollout")["container"]["env"][0]["value"] == "{{workflow.parameters.config}}"
    config_text = next(p["value"] for p in doc["spec"]["arguments"]["parameters"] if p["name"] == "config")
    secret = next(d for d in yaml.safe_load_all((POLICIES.parent / "storage-secret.yaml").read_text()) if d)
    assert secret["stringData"]["AWS_SECRET_ACCESS_KEY"] not in config_text
    assert cluster_example_config().cluster.storage_secret in config_text  # a name, never its values


def test_rollout_containers_run_read_only_with_scratch_volumes_for_writable_paths() -> None:
    rollout = template(_template_doc(), "rollout")
    for container in (rollout["container"], *rollout["sidecars"]):
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert "/tmp" in mounts and "/work" in mounts, container["name"]
    assert "/home/openforge" in {m["mountPath"] for m in rollout["container"]["volumeMounts"]}


def test_no_rollout_container_opens_a_way_around_the_policies() -> None:
    # A NetworkPolicy does not apply to the host's network: hostNetwork or a hostPort in the
    # rollout pod would bypass every rule above (hostPath volumes: the scratch-volume test).
    rollout = template(_template_doc(), "rollout")
    assert not rollout.get("hostNetwork") and "hostNetwork" not in rollout.get("podSpecPatch", "")
    for container in (rollout["container"], *rollout["sidecars"]):
        assert all("hostPort" not in port for port in container.get("ports", [])), container["name"]


def test_the_distillation_teacher_answers_its_distill_step_only() -> None:
    raw = cluster_example_config().model_dump(mode="json")
    raw["algorithm"]["distillation"] = {"teacher_model": "s3://bucket/teacher"}
    doc = compile_config(ExperimentConfig.model_validate(raw))[0]
    policy = _policies()["serve-teacher"]
    assert _selects(policy["spec"]["podSelector"], _pod_labels(doc, "serve-teacher"))
    (rule,) = policy["spec"]["ingress"]
    assert [_selects(peer["podSelector"], _pod_labels(doc, "distill")) for peer in rule["from"]] == [True]
    assert not any(_selects(peer["podSelector"], _pod_labels(doc, "rollout")) for peer in rule["from"])
    assert rule["ports"] == [{"protocol": "TCP", "port": SERVE_PORT}]
    teach = {t["name"]: t for t in template(doc, "teach")["dag"]["tasks"]}
    address = next(p["value"] for p in teach["distill"]["arguments"]["parameters"] if p["name"] == "teacher-address")
    assert address == f"{{{{tasks.serve-teacher.ip}}}}:{SERVE_PORT}"
