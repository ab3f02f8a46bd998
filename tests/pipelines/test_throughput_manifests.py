"""Overlapped iterations (`algorithm.max_staleness: 1`) and engine replicas (`engine.replicas`) in the
compiled manifests: the template, the CronWorkflow that runs it and the bounded Workflow, all
through the three checks."""

from __future__ import annotations

import pytest

from components.core.config import ConfigError, ExperimentConfig, load_config
from pipelines.compile import compile_config, manifest_of_kind
from pipelines.validate import check_manifests
from tests.pipelines._manifests import quickstart_config, require_schema, template


def _overlapped() -> ExperimentConfig:
    config = quickstart_config()
    return config.model_copy(update={"algorithm": config.algorithm.model_copy(update={"max_staleness": 1})})


def _tasks(doc: dict) -> dict[str, dict]:
    return {t["name"]: t for t in template(doc, "iteration")["dag"]["tasks"]}


def test_overlapped_manifests_pass_the_schema_the_round_trip_and_the_lint() -> None:
    docs = compile_config(_overlapped())
    assert check_manifests(docs, require_schema()) == []


def test_the_next_iterations_rollouts_follow_this_ones_beside_train() -> None:
    docs = compile_config(_overlapped())
    tasks = _tasks(manifest_of_kind(docs, "WorkflowTemplate"))
    ahead = tasks["generate-next"]
    assert ahead["template"] == "generate" and ahead["depends"] == "generate"
    assert ahead["when"] == "{{tasks.prepare.outputs.parameters.next-generate}} == true"
    arguments = {p["name"]: p["value"] for p in ahead["arguments"]["parameters"]}
    assert arguments == {
        "iteration": "{{tasks.prepare.outputs.parameters.next-iteration}}",
        "rollouts": "{{tasks.prepare.outputs.parameters.next-rollouts}}",
    }
    # Train does not wait for the next iteration's rollouts: that is the overlap.
    assert tasks["score"]["depends"] == "generate" and tasks["train"]["depends"] == "score"


def test_a_bounded_run_stops_sampling_at_its_end_and_the_cron_never_does() -> None:
    config = _overlapped()
    docs = compile_config(config)
    template_args = {p["name"]: p.get("value") for p in manifest_of_kind(docs, "WorkflowTemplate")["spec"]["arguments"]["parameters"]}
    assert template_args["stop-at"] == "0"
    cron = manifest_of_kind(docs, "CronWorkflow")["spec"]["workflowSpec"]
    assert "stop-at" not in {p["name"] for p in cron["arguments"]["parameters"]}  # the template's 0: no end
    bounded = manifest_of_kind(docs, "Workflow")
    for task in template(bounded, "iterations")["dag"]["tasks"]:
        assert {"name": "stop-at", "value": str(config.iterations)} in task["arguments"]["parameters"]


def test_in_order_iterations_compile_without_the_overlap() -> None:
    tasks = _tasks(manifest_of_kind(compile_config(quickstart_config()), "WorkflowTemplate"))
    assert "generate-next" not in tasks


def test_a_staleness_above_one_is_refused_with_the_range(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("name: stale\ntasks: {source: examples/tasks}\nalgorithm: {max_staleness: 2}\n")
    with pytest.raises(ConfigError, match="max_staleness"):
        load_config(path)


def test_engine_replicas_compile_to_one_serve_task_each_and_one_address_list() -> None:
    config = quickstart_config()
    config = config.model_copy(update={"engine": config.engine.model_copy(update={"replicas": 3})})
    docs = compile_config(config)
    assert check_manifests(docs, require_schema()) == []
    generate = template(manifest_of_kind(docs, "WorkflowTemplate"), "generate")
    tasks = {t["name"]: t for t in generate["dag"]["tasks"]}
    assert [n for n, t in tasks.items() if t["template"] == "serve"] == ["serve-0", "serve-1", "serve-2"]
    rollout = tasks["rollout"]
    assert rollout["depends"] == "serve-0 && serve-1 && serve-2"
    address = next(p["value"] for p in rollout["arguments"]["parameters"] if p["name"] == "serve-address")
    assert address == "{{tasks.serve-0.ip}}:8000,{{tasks.serve-1.ip}}:8000,{{tasks.serve-2.ip}}:8000"
    # Every serve daemon counts against parallelism: the rollouts keep their concurrency.
    assert generate["parallelism"] == config.rollout.concurrency + 3
