"""What the cluster section puts into the compiled pods: resources, placement, semaphore, retries, clean-up."""

from __future__ import annotations

from typing import Any

from tests.pipelines._manifests import quickstart_config, quickstart_manifest, template

from components.core.config import ExperimentConfig
from pipelines.compile import compile_config

GPU_STEPS = ("serve", "train")
CPU_STEPS = ("prepare", "rollout", "score", "commit", "exit-handler")


def _compiled(**cluster: Any) -> dict[str, Any]:
    raw = quickstart_config().model_dump(mode="json")
    raw["cluster"].update(cluster)
    return compile_config(ExperimentConfig.model_validate(raw))[0]


def test_each_step_gets_its_configured_resources_and_gpus_as_limits() -> None:
    doc = _compiled(
        gpu_resource="amd.com/gpu",
        resources={"train": {"cpu": "16", "memory": "128Gi", "gpu": 8}, "proxy": {"cpu": "100m", "memory": "128Mi"}},
    )
    train = template(doc, "train")["container"]["resources"]
    assert train["requests"] == {"cpu": "16", "memory": "128Gi", "amd.com/gpu": "8"}
    assert train["limits"] == {"memory": "128Gi", "amd.com/gpu": "8"}
    assert template(doc, "rollout")["sidecars"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    # Defaults: serve has its GPU, the CPU steps none.
    assert template(doc, "serve")["container"]["resources"]["limits"]["amd.com/gpu"] == "1"
    for step in CPU_STEPS:
        assert "amd.com/gpu" not in template(doc, step)["container"]["resources"].get("limits", {}), step


def test_serve_and_train_go_to_the_gpu_nodes_the_rest_to_the_cpu_nodes() -> None:
    taint = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    doc = _compiled(
        gpu_nodes={"node_selector": {"pool": "gpu"}, "tolerations": [taint]},
        cpu_nodes={"node_selector": {"pool": "cpu"}},
    )
    for step in GPU_STEPS:
        assert template(doc, step)["nodeSelector"] == {"pool": "gpu"}
        assert template(doc, step)["tolerations"] == [taint]
    for step in CPU_STEPS:
        assert template(doc, step)["nodeSelector"] == {"pool": "cpu"}
        assert "tolerations" not in template(doc, step)


def test_serve_and_train_hold_the_gpu_semaphore_and_nothing_else_does() -> None:
    doc = _compiled(gpu_semaphore={"config_map": "team-gpus", "key": "a100"})
    expected = {"semaphores": [{"configMapKeyRef": {"name": "team-gpus", "key": "a100"}}]}
    for step in GPU_STEPS:
        assert template(doc, step)["synchronization"] == expected
    for step in CPU_STEPS:
        assert "synchronization" not in template(doc, step)
    # One workflow per experiment at a time, whoever submitted it.
    assert doc["spec"]["synchronization"] == {"mutexes": [{"name": "openforge-quickstart"}]}


def test_serve_stops_before_train_so_the_gpu_is_free() -> None:
    # Argo stops a daemon when the DAG that started it ends: serve lives in `generate`,
    # which ends before train starts, so the semaphore (and the GPU) is released in between.
    doc = quickstart_manifest()
    generate = [t["name"] for t in template(doc, "generate")["dag"]["tasks"]]
    top = [t["name"] for t in template(doc, "iteration")["dag"]["tasks"]]
    assert "serve" in generate and "serve" not in top and "train" in top


def test_retries_by_failure_kind() -> None:
    doc = quickstart_manifest()
    policies = {step: template(doc, step)["retryStrategy"]["retryPolicy"] for step in (*GPU_STEPS, *CPU_STEPS)}
    # Infrastructure errors only: a rollout's agent failures are outcomes (exit 0), and a
    # failed GPU step would fail again. The short CPU steps are idempotent: retry anything.
    assert policies == {
        "serve": "OnError",
        "train": "OnError",
        "rollout": "OnError",
        "prepare": "Always",
        "score": "Always",
        "commit": "Always",
        "exit-handler": "Always",
    }
    for step in policies:
        strategy = template(doc, step)["retryStrategy"]
        assert strategy["limit"] == 2 and strategy["backoff"]["duration"] == "15s", step


def test_rollout_deadline_comes_from_prepare_per_task() -> None:
    rollout = template(quickstart_manifest(), "rollout")
    assert rollout["activeDeadlineSeconds"] == "{{inputs.parameters.deadline}}"


def test_pod_clean_up_and_time_to_live() -> None:
    doc = _compiled(ttl_after_success_s=60, ttl_after_failure_s=3600)
    assert doc["spec"]["podGC"] == {"strategy": "OnPodSuccess"}
    assert doc["spec"]["ttlStrategy"] == {"secondsAfterSuccess": 60, "secondsAfterFailure": 3600}


def test_exit_hook_records_the_status_with_the_storage_and_tracking_it_needs() -> None:
    doc = quickstart_manifest()
    assert doc["spec"]["onExit"] == "exit-handler"
    handler = template(doc, "exit-handler")["container"]
    assert handler["command"] == [
        "openforge", "step", "record-status", "--workflow", "{{workflow.name}}", "--status", "{{workflow.status}}",
    ]  # fmt: skip


def test_artifacts_go_through_the_configured_repository() -> None:
    doc = _compiled(artifact_repository={"config_map": "repos", "key": "minio"})
    assert doc["spec"]["artifactRepositoryRef"] == {"configMap": "repos", "key": "minio"}


def test_every_pod_runs_as_the_configured_non_root_user() -> None:
    doc = _compiled(run_as_user=4242)
    security = doc["spec"]["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] == 4242 and security["fsGroup"] == 4242
    for step in (*GPU_STEPS, *CPU_STEPS):
        container = template(doc, step)["container"]["securityContext"]
        assert container["allowPrivilegeEscalation"] is False and container["capabilities"] == {"drop": ["ALL"]}, step


def test_bounded_workflow_and_cron_share_the_templates_settings() -> None:
    template_doc, cron, bounded = compile_config(quickstart_config())
    for key in ("serviceAccountName", "artifactRepositoryRef", "podGC", "ttlStrategy", "onExit", "synchronization"):
        assert bounded["spec"][key] == template_doc["spec"][key], key
    # The cron adds nothing of its own: the template it references carries every setting.
    assert set(cron["spec"]["workflowSpec"]) == {"workflowTemplateRef", "arguments"}
