"""The CronWorkflow (continual training) and the bounded multi-iteration Workflow."""

from __future__ import annotations

from typing import Any

from tests.pipelines._manifests import quickstart_config, quickstart_manifest, template

from components.core.config import ExperimentConfig
from pipelines.compile import compile_config, manifest_of_kind


def _compiled(kind: str, **overrides: Any) -> dict[str, Any]:
    raw = quickstart_config().model_dump(mode="json")
    for section, values in overrides.items():
        raw[section] = {**raw[section], **values} if isinstance(values, dict) else values
    return manifest_of_kind(compile_config(ExperimentConfig.model_validate(raw)), kind)


def test_cron_runs_the_next_iteration_of_the_deployed_template_one_at_a_time() -> None:
    cron = quickstart_manifest("CronWorkflow")
    spec = cron["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["workflowSpec"] == {
        "workflowTemplateRef": {"name": "quickstart-iteration"},
        "arguments": {"parameters": [{"name": "iteration", "value": "next"}]},
    }
    assert cron["metadata"]["name"] == "quickstart-continual"


def test_cron_schedule_comes_from_the_config() -> None:
    cron = _compiled(
        "CronWorkflow",
        cluster={"cron": {"schedules": ["15 2 * * *", "@hourly"], "timezone": "Europe/Paris", "starting_deadline_s": 90,
                          "suspend": True, "history_limit": 5}},
    )  # fmt: skip
    spec = cron["spec"]
    assert spec["schedules"] == ["15 2 * * *", "@hourly"] and spec["timezone"] == "Europe/Paris"
    assert spec["startingDeadlineSeconds"] == 90 and spec["suspend"] is True
    assert spec["successfulJobsHistoryLimit"] == 5 and spec["failedJobsHistoryLimit"] == 5


def test_bounded_workflow_chains_every_iteration_of_the_config() -> None:
    workflow = _compiled("Workflow", iterations=3)
    assert workflow["metadata"]["generateName"] == "quickstart-train-"
    assert workflow["spec"]["entrypoint"] == "iterations"
    tasks = template(workflow, "iterations")["dag"]["tasks"]
    assert [(t["name"], t.get("depends"), t["arguments"]["parameters"]) for t in tasks] == [
        (
            f"iteration-{k}",
            f"iteration-{k - 1}" if k else None,
            # stop-at: overlapped iterations sample nothing past the run's end.
            [{"name": "iteration", "value": str(k)}, {"name": "stop-at", "value": "3"}],
        )
        for k in range(3)
    ]
    assert {t["template"] for t in tasks} == {"iteration"}


def test_bounded_workflow_carries_the_same_iteration_templates() -> None:
    workflow = quickstart_manifest("Workflow")
    iteration_template = quickstart_manifest()
    own = {t["name"]: t for t in workflow["spec"]["templates"] if t["name"] != "iterations"}
    assert own == {t["name"]: t for t in iteration_template["spec"]["templates"]}
    # It declares only the config: each iteration's number is the chain's argument.
    assert [p["name"] for p in workflow["spec"]["arguments"]["parameters"]] == ["config"]
