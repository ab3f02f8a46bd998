"""The NetworkPolicy that lets a recording's rollout pods reach an endpoint teacher on a cluster.

argo/cluster/network-policies.yaml lets rollout pods reach their serve step, DNS and the
artifact store, nothing else. A recording with an endpoint teacher has no serve step: each
pod's proxy sidecar calls the teacher. `openforge record --compile-only` writes this policy
beside the recording's Workflow; it selects that recording's rollout pods alone (a label
the compiler gives them) and opens TCP to the teacher's port. A NetworkPolicy applies to a
whole pod and names addresses, not hosts: the harness container can reach the same
addresses, though only the sidecar holds the key (docs/trainer.md, "Recording a teacher").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from components.core.config import ExperimentConfig
from pipelines import pod_specs

TEACHER_EGRESS_LABEL = "openforge.dev/teacher-egress"
POLICY_FILE = "teacher-egress.yaml"
# Never opened by default: the cluster's own networks, loopback, link-local (a cloud's
# metadata service) and carrier-grade NAT. teacher.egress_cidrs opens exactly what it names.
_NOT_THE_INTERNET = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10")


def teacher_egress_labels(config: ExperimentConfig) -> dict[str, str]:
    """The label a recording's rollout pods carry for the policy to select them; none otherwise."""
    return {TEACHER_EGRESS_LABEL: config.name} if config.endpoint_teacher is not None else {}


def teacher_egress_policy(config: ExperimentConfig) -> dict[str, Any]:
    teacher = config.endpoint_teacher
    if teacher is None:
        raise ValueError("only a recording with an endpoint teacher calls out of the cluster")
    url = urlparse(teacher.url)
    port = url.port or (443 if url.scheme == "https" else 80)
    if teacher.egress_cidrs:
        peers = [{"ipBlock": {"cidr": cidr}} for cidr in teacher.egress_cidrs]
    else:
        peers = [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(_NOT_THE_INTERNET)}}]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{config.name}-teacher-egress",
            "namespace": config.cluster.namespace,
            "labels": {pod_specs.PART_OF_LABEL: "openforge", pod_specs.EXPERIMENT_LABEL: config.name},
        },
        "spec": {
            "podSelector": {"matchLabels": {pod_specs.STEP_LABEL: "rollout", **teacher_egress_labels(config)}},
            "policyTypes": ["Egress"],
            "egress": [{"to": peers, "ports": [{"protocol": "TCP", "port": port}]}],
        },
    }
