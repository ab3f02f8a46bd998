"""The iteration WorkflowTemplate: DAG shape, the rollout pod, and what each step is given."""

from __future__ import annotations

from typing import Any

from tests.pipelines._manifests import dag_task, quickstart_config, quickstart_manifest, template

from components.core.config import CONFIG_ENV
from components.core.sft_config import SftConfig
from components.core.storage import RunLayout
from pipelines.compile import compile_config
from pipelines.iteration import config_yaml

ITERATION = "{{inputs.parameters.iteration}}"
STEPS = ("prepare", "serve", "rollout", "score", "train", "commit")
PENDING = "{{tasks.prepare.outputs.parameters.pending}} == true"


def _containers(tmpl: dict[str, Any]) -> list[dict[str, Any]]:
    return [tmpl["container"], *tmpl.get("sidecars", [])]


def _depends(doc: dict[str, Any], dag: str) -> dict[str, str | None]:
    return {t["name"]: t.get("depends") for t in template(doc, dag)["dag"]["tasks"]}


def test_dag_chains_prepare_generate_score_train_commit() -> None:
    doc = quickstart_manifest()
    assert doc["spec"]["entrypoint"] == "iteration"
    assert _depends(doc, "iteration") == {
        "prepare": None,
        "generate": "prepare",
        "score": "generate",
        "train": "score",
        "commit": "train",
    }
    assert _depends(doc, "generate") == {"serve": None, "rollout": "serve"}


def test_only_a_pending_iteration_runs_past_prepare() -> None:
    doc = quickstart_manifest()
    assert dag_task(doc, "generate")["when"] == "{{tasks.prepare.outputs.parameters.generate}} == true"
    for step in ("score", "train", "commit"):
        assert dag_task(doc, step)["when"] == PENDING
    assert "when" not in dag_task(doc, "prepare")


def test_later_steps_take_the_iteration_prepare_resolved() -> None:
    doc = quickstart_manifest()
    prepare = dag_task(doc, "prepare")
    assert prepare["arguments"]["parameters"] == [
        {"name": "iteration", "value": ITERATION},
        {"name": "stop-at", "value": "{{inputs.parameters.stop-at}}"},
    ]
    resolved = {"name": "iteration", "value": "{{tasks.prepare.outputs.parameters.iteration}}"}
    for step in ("generate", "score", "train", "commit"):
        assert resolved in dag_task(doc, step)["arguments"]["parameters"]
    # The entrypoint's input comes from the workflow argument of the same name, `next` by default.
    (declared,) = [p for p in doc["spec"]["arguments"]["parameters"] if p["name"] == "iteration"]
    assert declared["value"] == "next"


def test_rollouts_fan_out_over_the_list_prepare_writes() -> None:
    doc = quickstart_manifest()
    generate = dag_task(doc, "generate")
    rollouts = {p["name"]: p["value"] for p in generate["arguments"]["parameters"]}["rollouts"]
    assert rollouts == "{{tasks.prepare.outputs.parameters.rollouts}}"
    rollout = dag_task(doc, "rollout")
    assert rollout["withParam"] == "{{inputs.parameters.rollouts}}"
    args = {p["name"]: p["value"] for p in rollout["arguments"]["parameters"]}
    assert args == {
        "iteration": ITERATION,
        "rollout-id": "{{item.rollout_id}}",
        "task-id": "{{item.task_id}}",
        "deadline": "{{item.deadline_s}}",
        "serve-address": "{{tasks.serve.ip}}:8000",
    }
    outputs = {p["name"]: p["valueFrom"]["path"] for p in template(doc, "prepare")["outputs"]["parameters"]}
    assert outputs == {
        "iteration": "/tmp/prepare/iteration",
        "pending": "/tmp/prepare/pending",
        "generate": "/tmp/prepare/generate",
        "rollouts": "/tmp/prepare/rollouts.json",
        "next-iteration": "/tmp/prepare/next-iteration",
        "next-generate": "/tmp/prepare/next-generate",
        "next-rollouts": "/tmp/prepare/next-rollouts.json",
    }
    assert template(doc, "prepare")["container"]["command"][-2:] == ["--out-dir", "/tmp/prepare"]


def test_rollout_concurrency_bounds_the_generate_dag_with_room_for_the_serve_daemon() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.rollout.concurrency = 3
    doc = compile_config(config)[0]
    assert template(doc, "generate")["parallelism"] == 4
    assert "parallelism" not in template(doc, "iteration")


def test_serve_is_a_daemon_ready_when_health_answers() -> None:
    serve = template(quickstart_manifest(), "serve")
    assert serve["daemon"] is True
    assert serve["container"]["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8000}}
    assert serve["container"]["command"][-4:] == ["--host", "0.0.0.0", "--port", "8000"]


def test_every_container_runs_its_step_with_the_config_and_iteration() -> None:
    doc = quickstart_manifest()
    declared = {p["name"] for p in doc["spec"]["arguments"]["parameters"]}
    assert declared == {"iteration", "stop-at", "config"}
    for step in STEPS:
        tmpl = template(doc, step)
        assert tmpl["container"]["command"][:5] == ["openforge", "step", step, "--iteration", ITERATION]
        assert {"name": "iteration"} in tmpl["inputs"]["parameters"]
        for container in _containers(tmpl):
            assert {"name": CONFIG_ENV, "value": "{{workflow.parameters.config}}"} in container["env"]


def test_config_parameter_holds_the_whole_config_as_yaml() -> None:
    import yaml

    doc = quickstart_manifest()
    text = next(p["value"] for p in doc["spec"]["arguments"]["parameters"] if p["name"] == "config")
    # `evaluation` appears only in an evaluation's config (pipelines/evaluate.py), the optional sections only where set.
    unset = {"evaluation": True, "sft": True, "teacher": True, "algorithm": {"distillation"}}
    assert yaml.safe_load(text) == quickstart_config().model_dump(mode="json", exclude=unset)
    with_sft = quickstart_config().model_copy(update={"sft": SftConfig(recordings="teacher")})
    assert yaml.safe_load(config_yaml(with_sft))["sft"]["recordings"] == "teacher"


def test_storage_steps_get_credentials_from_the_configured_secret() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.cluster.storage_secret = "my-minio"
    doc = compile_config(config)[0]
    for step in ("prepare", "serve", "score", "train", "commit", "exit-handler"):
        assert template(doc, step)["container"]["envFrom"] == [{"secretRef": {"name": "my-minio"}}]


def test_rollout_pod_runs_the_proxy_as_a_sidecar_sharing_the_work_volume() -> None:
    rollout = template(quickstart_manifest(), "rollout")
    (sidecar,) = rollout["sidecars"]
    assert sidecar["command"] == [
        "openforge", "proxy", "--upstream", "http://{{inputs.parameters.serve-address}}",
        "--out", "/work/trajectories", "--port", "8100", "--training", "--tool-call-parser", "hermes",
    ]  # fmt: skip
    for container in (rollout["container"], sidecar):
        assert {"name": "work", "mountPath": "/work"} in container["volumeMounts"]
    command = rollout["container"]["command"]
    flags = dict(zip(command[5::2], command[6::2]))
    assert flags == {
        "--rollout-id": "{{inputs.parameters.rollout-id}}",
        "--task-dir": "/work/task",
        "--proxy-url": "http://127.0.0.1:8100",
        "--trajectory": "/work/trajectories/{{inputs.parameters.rollout-id}}.jsonl",
        "--out": "/work/out",
    }


def test_seeded_sampling_seeds_the_proxy_per_experiment_and_iteration() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.seed, config.rollout.seeded_sampling = 7, True
    (sidecar,) = template(compile_config(config)[0], "rollout")["sidecars"]
    command = sidecar["command"]
    assert command[command.index("--sampling-seed") + 1] == f"7/{ITERATION}"


def test_a_training_temperature_reaches_the_proxy_and_temperature_1_adds_no_flag() -> None:
    config = quickstart_config().model_copy(deep=True)
    assert "--temperature" not in template(compile_config(config)[0], "rollout")["sidecars"][0]["command"]
    config.algorithm.temperature = 0.6
    command = template(compile_config(config)[0], "rollout")["sidecars"][0]["command"]
    assert command[command.index("--training") + 1 : command.index("--training") + 3] == ["--temperature", "0.6"]


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
    # The proxy's image store beside the trajectory, so a record's `images/<sha256>.<ext>` resolves there.
    assert outputs["images"]["path"] == "/work/trajectories/images"
    assert outputs["images"]["s3"]["key"] == layout.images(ITERATION) == f"{config.name}/iterations/{ITERATION}/trajectories/images"
    # Stored as plain files (Argo would tar.gz them otherwise); a silent harness has no trajectory,
    # an image-free one no images.
    assert all(a["archive"] == {"none": {}} for a in outputs.values())
    assert outputs["trajectory"]["optional"] is True and outputs["images"]["optional"] is True
    assert "optional" not in outputs["outcome"]


def test_images_namespace_and_account_come_from_the_cluster_config() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.cluster.image, config.cluster.engine_image, config.cluster.proxy_image = "r:1", "e:1", "p:1"
    config.cluster.namespace, config.cluster.service_account = "team-a", "runner"
    doc = compile_config(config)[0]
    images = {step: template(doc, step)["container"]["image"] for step in STEPS}
    assert images == dict.fromkeys(STEPS, "r:1") | {"serve": "e:1"}
    assert template(doc, "rollout")["sidecars"][0]["image"] == "p:1"
    config.harness.name, config.trainer.backend = "codex", "verl"
    config.cluster.image = "reg.local/of/runtime:2"
    doc = compile_config(config)[0]
    assert template(doc, "rollout")["container"]["image"] == "reg.local/of/runtime-codex:2"
    assert template(doc, "train")["container"]["image"] == "reg.local/of/trainer:2"
    assert template(doc, "score")["container"]["image"] == "reg.local/of/runtime:2"
    assert doc["metadata"]["namespace"] == "team-a"
    assert doc["spec"]["serviceAccountName"] == "runner"
    assert template(doc, "rollout")["executor"] == {"serviceAccountName": "runner"}


def test_longest_allowed_experiment_name_gives_a_63_character_template_name() -> None:
    config = quickstart_config().model_copy(deep=True)
    config.name = "x" * 40
    doc = compile_config(config)[0]
    assert doc["metadata"]["name"] == "x" * 40 + "-iteration"
    assert len(doc["metadata"]["name"]) <= 63
