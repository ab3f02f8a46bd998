"""The iteration WorkflowTemplate: DAG shape, the rollout pod, and what each step is given."""

from __future__ import annotations

from typing import Any

from tests.pipelines._manifests import dag_task, quickstart_config, quickstart_manifest, template

from components.core.config import CONFIG_ENV
from components.core.storage import RunLayout
from pipelines.compile import compile_config

ITERATION = "{{workflow.parameters.iteration}}"
STEPS = ("prepare", "serve", "rollout", "score", "train", "commit")


def _containers(tmpl: dict[str, Any]) -> list[dict[str, Any]]:
    return [tmpl["container"], *tmpl.get("sidecars", [])]


def test_dag_chains_prepare_serve_rollout_score_train_commit() -> None:
    doc = quickstart_manifest()
    assert doc["spec"]["entrypoint"] == "iteration"
    depends = {t["name"]: t.get("depends") for t in template(doc, "iteration")["dag"]["tasks"]}
    assert depends == {
        "prepare": None,
        "serve": "prepare",
        "rollout": "prepare && serve",
        "score": "rollout",
        "train": "score",
        "commit": "train",
    }


def test_rollouts_fan_out_over_the_list_prepare_writes() -> None:
    doc = quickstart_manifest()
    rollout = dag_task(doc, "rollout")
    assert rollout["withParam"] == "{{tasks.prepare.outputs.parameters.rollouts}}"
    args = {p["name"]: p["value"] for p in rollout["arguments"]["parameters"]}
    assert args == {
        "rollout-id": "{{item.rollout_id}}",
        "task-id": "{{item.task_id}}",
        "serve-address": "{{tasks.serve.ip}}:8000",
    }
    prepare = template(doc, "prepare")
    assert prepare["outputs"]["parameters"] == [{"name": "rollouts", "valueFrom": {"path": "/tmp/rollouts.json"}}]
    assert prepare["container"]["command"][-2:] == ["--out", "/tmp/rollouts.json"]


def test_rollout_concurrency_bounds_the_dag_with_room_for_the_serve_daemon() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.rollout.concurrency = 3
    doc = compile_config(config)[0]
    assert template(doc, "iteration")["parallelism"] == 4


def test_serve_is_a_daemon_ready_when_health_answers() -> None:
    serve = template(quickstart_manifest(), "serve")
    assert serve["daemon"] is True
    assert serve["container"]["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8000}}
    assert serve["container"]["command"][-4:] == ["--host", "0.0.0.0", "--port", "8000"]


def test_every_container_runs_its_step_with_the_config_and_iteration() -> None:
    doc = quickstart_manifest()
    declared = {p["name"] for p in doc["spec"]["arguments"]["parameters"]}
    assert declared == {"iteration", "config"}
    for step in STEPS:
        tmpl = template(doc, step)
        assert tmpl["container"]["command"][:5] == ["openforge", "step", step, "--iteration", ITERATION]
        for container in _containers(tmpl):
            assert {"name": CONFIG_ENV, "value": "{{workflow.parameters.config}}"} in container["env"]


def test_config_parameter_holds_the_whole_config_as_yaml() -> None:
    import yaml

    doc = quickstart_manifest()
    text = next(p["value"] for p in doc["spec"]["arguments"]["parameters"] if p["name"] == "config")
    assert yaml.safe_load(text) == quickstart_config().model_dump(mode="json")


def test_rollout_pod_holds_no_storage_or_model_credentials() -> None:
    rollout = template(quickstart_manifest(), "rollout")
    for container in _containers(rollout):
        assert "envFrom" not in container
        assert all("valueFrom" not in e for e in container.get("env", []))
        assert [e["name"] for e in container["env"]] == [CONFIG_ENV]


def test_storage_steps_get_credentials_from_the_configured_secret() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.cluster.storage_secret = "my-minio"
    doc = compile_config(config)[0]
    for step in ("prepare", "serve", "score", "train", "commit"):
        assert template(doc, step)["container"]["envFrom"] == [{"secretRef": {"name": "my-minio"}}]


def test_rollout_pod_runs_the_proxy_as_a_sidecar_sharing_the_work_volume() -> None:
    rollout = template(quickstart_manifest(), "rollout")
    assert rollout["volumes"] == [{"name": "work", "emptyDir": {}}]
    (sidecar,) = rollout["sidecars"]
    assert sidecar["command"] == [
        "openforge", "proxy", "--upstream", "http://{{inputs.parameters.serve-address}}",
        "--out", "/work/trajectories", "--port", "8100", "--training",
    ]  # fmt: skip
    for container in (rollout["container"], sidecar):
        assert container["volumeMounts"] == [{"name": "work", "mountPath": "/work"}]
    command = rollout["container"]["command"]
    flags = dict(zip(command[5::2], command[6::2]))
    assert flags == {
        "--rollout-id": "{{inputs.parameters.rollout-id}}",
        "--task-dir": "/work/task",
        "--proxy-url": "http://127.0.0.1:8100",
        "--trajectory": "/work/trajectories/{{inputs.parameters.rollout-id}}.jsonl",
        "--out": "/work/out",
    }


def test_rollout_artifacts_use_the_run_layout_keys() -> None:
    config = quickstart_config()
    layout = RunLayout(config.name)
    rollout = template(quickstart_manifest(), "rollout")
    rid = "{{inputs.parameters.rollout-id}}"
    (task,) = rollout["inputs"]["artifacts"]
    assert task == {"name": "task", "path": "/work/task", "s3": {"key": layout.task("{{inputs.parameters.task-id}}")}}
    assert layout.task("t") == f"{config.name}/tasks/t"
    outputs = {a["name"]: a for a in rollout["outputs"]["artifacts"]}
    assert outputs["outcome"]["s3"]["key"] == layout.outcome(ITERATION, rid)
    assert outputs["trajectory"]["s3"]["key"] == layout.trajectory(ITERATION, rid)
    assert outputs["outcome"]["path"] == "/work/out/outcome.json"
    assert outputs["trajectory"]["path"] == f"/work/trajectories/{rid}.jsonl"
    # Stored as plain files (Argo would tar.gz them otherwise); a silent harness has no trajectory.
    assert all(a["archive"] == {"none": {}} for a in outputs.values())
    assert outputs["trajectory"]["optional"] is True and "optional" not in outputs["outcome"]


def test_images_namespace_and_account_come_from_the_cluster_config() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.cluster.image, config.cluster.engine_image, config.cluster.proxy_image = "r:1", "e:1", "p:1"
    config.cluster.namespace, config.cluster.service_account = "team-a", "runner"
    doc = compile_config(config)[0]
    images = {step: template(doc, step)["container"]["image"] for step in STEPS}
    assert images == dict.fromkeys(STEPS, "r:1") | {"serve": "e:1"}
    assert template(doc, "rollout")["sidecars"][0]["image"] == "p:1"
    assert doc["metadata"]["namespace"] == "team-a"
    assert doc["spec"]["serviceAccountName"] == "runner"


def test_longest_allowed_experiment_name_gives_a_63_character_template_name() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.name = "x" * 40
    doc = compile_config(config)[0]
    assert doc["metadata"]["name"] == "x" * 40 + "-iteration"
    assert len(doc["metadata"]["name"]) <= 63
