"""`when` on DAG tasks, the workflow's `onExit` handler, and entrypoint inputs from workflow parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.storage import open_store
from pipelines.executor import ExecutorOptions, ManifestError, NodeEvent, NodePhase, WorkflowFailed, execute_workflow
from tests.pipelines.executor.manifests import APPEND, dag, inputs, pod, task, workflow


def _run(manifests, tmp_path: Path, events: list[NodeEvent] | None = None, **parameters: str):
    return execute_workflow(
        manifests,
        parameters=parameters,
        store=open_store(f"file://{tmp_path / 'store'}"),
        workdir=tmp_path / "exec",
        options=ExecutorOptions(cwd=tmp_path),
        observer=(events.append if events is not None else lambda e: None),
    )


def _append(**fields) -> dict:
    return pod("append", APPEND, "{{workflow.parameters.log}}", "{{inputs.parameters.msg}}", inputs=inputs("msg"), **fields)


def _conditional(condition: str) -> list[dict]:
    return workflow(
        dag(
            "main",
            task("gate", "append", params={"msg": "gate"}),
            task("maybe", "append", depends="gate", when=condition, params={"msg": "maybe"}),
            task("after", "append", depends="maybe", params={"msg": "after"}),
        ),
        _append(),
        parameters={"log": "", "go": "true"},
    )


def test_a_false_when_skips_the_task_and_its_dependents_still_run(tmp_path: Path) -> None:
    log, events = tmp_path / "log.txt", []
    _run(_conditional("{{workflow.parameters.go}} == true"), tmp_path, events, log=str(log), go="false")
    assert log.read_text().split() == ["gate", "after"]
    (skipped,) = [e for e in events if e.task == "maybe"]
    assert skipped.phase is NodePhase.SKIPPED and "false" in skipped.detail


def test_a_true_when_runs_the_task(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    _run(_conditional("{{workflow.parameters.go}} != false"), tmp_path, log=str(log))
    assert log.read_text().split() == ["gate", "maybe", "after"]


def test_a_when_beyond_one_comparison_is_refused_by_name(tmp_path: Path) -> None:
    manifests = _conditional("{{workflow.parameters.go}} == true && 1 == 1")
    with pytest.raises(ManifestError, match="one 'a == b'"):
        _run(manifests, tmp_path, log=str(tmp_path / "log.txt"))


def _with_exit_handler(main_code: str) -> list[dict]:
    exit_handler = pod("report", APPEND, "{{workflow.parameters.log}}", "exit {{workflow.status}}")
    return workflow(
        dag("main", task("work", "work")),
        pod("work", main_code),
        exit_handler,
        parameters={"log": ""},
        onExit="report",
    )


def test_on_exit_runs_after_a_success_with_the_workflow_status(tmp_path: Path) -> None:
    log, events = tmp_path / "log.txt", []
    _run(_with_exit_handler("pass"), tmp_path, events, log=str(log))
    assert log.read_text().split("\n")[0] == "exit Succeeded"
    assert [e.node for e in events if e.task == "onExit"][-1] == "test-flow.onExit"


def test_on_exit_runs_after_a_failure_and_the_workflow_still_fails(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    with pytest.raises(WorkflowFailed, match="work"):
        _run(_with_exit_handler("raise SystemExit(3)"), tmp_path, log=str(log))
    assert log.read_text().split("\n")[0] == "exit Failed"


def test_a_failing_exit_handler_fails_the_workflow(tmp_path: Path) -> None:
    manifests = _with_exit_handler("pass")
    manifests[0]["spec"]["templates"][2] = pod("report", "raise SystemExit(1)")
    with pytest.raises(WorkflowFailed, match="onExit"):
        _run(manifests, tmp_path, log=str(tmp_path / "log.txt"))


def test_workflow_status_outside_an_exit_handler_is_an_unknown_reference(tmp_path: Path) -> None:
    manifests = workflow(dag("main", task("a", "early")), pod("early", "pass", "{{workflow.status}}"))
    with pytest.raises(ManifestError, match="workflow.status"):
        _run(manifests, tmp_path)


def test_entrypoint_inputs_take_the_workflow_parameters_of_the_same_name(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    entry = dag("main", task("a", "append", params={"msg": "got-{{inputs.parameters.msg}}"}), inputs=inputs("msg"))
    manifests = workflow(entry, _append(), parameters={"log": "", "msg": "default"})
    _run(manifests, tmp_path, log=str(log), msg="given")
    assert log.read_text().split() == ["got-given"]
