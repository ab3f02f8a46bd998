"""DAG order, parameters, fan-out, parallelism, failures and retries on small manifests."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from components.core.storage import open_store
from pipelines.executor import (
    ExecutorOptions,
    ManifestError,
    NodeEvent,
    NodePhase,
    WorkflowFailed,
    execute_workflow,
)
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


def _diamond() -> list[dict]:
    append = pod("append", APPEND, "{{workflow.parameters.log}}", "{{inputs.parameters.msg}}", inputs=inputs("msg"))
    return workflow(
        dag(
            "main",
            task("d", "append", depends="b && c.Succeeded", params={"msg": "d"}),
            task("b", "append", depends="a", params={"msg": "b"}),
            task("c", "append", dependencies=["a"], params={"msg": "c-{{workflow.parameters.suffix}}"}),
            task("a", "append", params={"msg": "a"}),
        ),
        append,
        parameters={"log": "", "suffix": "default"},
    )


def test_tasks_run_after_their_dependencies(tmp_path: Path) -> None:
    log = tmp_path / "order.txt"
    _run(_diamond(), tmp_path, log=str(log))
    lines = log.read_text().split()
    assert lines[0] == "a" and lines[-1] == "d"
    assert sorted(lines[1:3]) == ["b", "c-default"]


def test_workflow_parameters_override_defaults_and_reach_inputs(tmp_path: Path) -> None:
    log = tmp_path / "order.txt"
    _run(_diamond(), tmp_path, log=str(log), suffix="given")
    assert "c-given" in log.read_text().split()


def test_unknown_workflow_parameter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no parameter.*colour"):
        _run(_diamond(), tmp_path, log="x", colour="red")


def test_unknown_reference_names_the_template(tmp_path: Path) -> None:
    manifests = workflow(pod("solo", APPEND, "{{workflow.parameters.nope}}", "x"))
    with pytest.raises(ManifestError, match=r"solo.*\{\{workflow.parameters.nope\}\}"):
        _run(manifests, tmp_path)


def test_changing_the_manifest_changes_what_runs(tmp_path: Path) -> None:
    log = tmp_path / "order.txt"
    manifests = _diamond()
    _run(manifests, tmp_path, log=str(log))
    first = sorted(log.read_text().split())
    changed = copy.deepcopy(manifests)
    tasks = changed[0]["spec"]["templates"][0]["dag"]["tasks"]
    tasks[0]["arguments"]["parameters"][0]["value"] = "changed"
    tasks.append(task("e", "append", depends="d", params={"msg": "extra"}))
    log.unlink()
    _run(changed, tmp_path, log=str(log))
    second = log.read_text().split()
    assert first == ["a", "b", "c-default", "d"]
    assert sorted(second) == ["a", "b", "c-default", "changed", "extra"]
    assert second[-1] == "extra"


# Writes the JSON list of rollouts (as prepare does) to /tmp/rollouts.json.
_PREPARE = (
    "import json, pathlib, sys; pathlib.Path(sys.argv[1]).write_text(json.dumps("
    "[{'rollout_id': f't{i}-s0', 'task_id': f't{i}'} for i in range(int(sys.argv[2]))]))"
)


def _fan_out(count: int, parallelism: int | None = None) -> list[dict]:
    prepare = pod(
        "prepare",
        _PREPARE,
        "/tmp/rollouts.json",
        str(count),
        outputs={"parameters": [{"name": "rollouts", "valueFrom": {"path": "/tmp/rollouts.json"}}]},
    )
    # Sleeps a little so siblings overlap, then records which rollout ran.
    rollout = pod(
        "rollout",
        "import sys, time; time.sleep(0.3); open(sys.argv[1], 'a').write(sys.argv[2] + ' ' + sys.argv[3] + '\\n')",
        "{{workflow.parameters.log}}",
        "{{inputs.parameters.rollout-id}}",
        "{{inputs.parameters.task-id}}",
        inputs=inputs("rollout-id", "task-id"),
    )
    main = dag(
        "main",
        task("prepare", "prepare"),
        task(
            "rollout",
            "rollout",
            depends="prepare",
            withParam="{{tasks.prepare.outputs.parameters.rollouts}}",
            params={"rollout-id": "{{item.rollout_id}}", "task-id": "{{item.task_id}}"},
        ),
        **({"parallelism": parallelism} if parallelism else {}),
    )
    return workflow(main, prepare, rollout, parameters={"log": ""})


def _max_running(events: list[NodeEvent], task_name: str) -> int:
    running, peak = 0, 0
    for event in events:
        if event.task != task_name or event.fan_out is not None or "(" not in event.node:
            continue
        running += 1 if event.phase is NodePhase.RUNNING else -1
        peak = max(peak, running)
    return peak


def test_with_param_fans_out_over_the_output_parameter(tmp_path: Path) -> None:
    log = tmp_path / "rollouts.txt"
    events: list[NodeEvent] = []
    _run(_fan_out(5), tmp_path, events, log=str(log))
    assert sorted(log.read_text().splitlines()) == [f"t{i}-s0 t{i}" for i in range(5)]
    assert [e.fan_out for e in events if e.fan_out is not None] == [5]


def test_fan_out_runs_at_most_parallelism_children_at_once(tmp_path: Path) -> None:
    events: list[NodeEvent] = []
    _run(_fan_out(6, parallelism=2), tmp_path, events, log=str(tmp_path / "log"))
    assert _max_running(events, "rollout") == 2


def test_empty_fan_out_succeeds_and_dependents_run(tmp_path: Path) -> None:
    log = tmp_path / "log"
    manifests = _fan_out(0)
    manifests[0]["spec"]["templates"][0]["dag"]["tasks"].append(
        task("after", "prepare", depends="rollout")
    )
    _run(manifests, tmp_path, log=str(log))
    assert not log.exists()


def test_failing_task_fails_the_dag_and_its_dependents_do_not_run(tmp_path: Path) -> None:
    log = tmp_path / "log"
    manifests = workflow(
        dag("main", task("bad", "bad"), task("after", "append", depends="bad")),
        pod("bad", "import sys; print('boom'); sys.exit(3)"),
        pod("append", APPEND, str(log), "after"),
    )
    events: list[NodeEvent] = []
    with pytest.raises(WorkflowFailed, match=r"(?s)bad: exit code 3.*boom"):
        _run(manifests, tmp_path, events)
    assert not log.exists()
    assert (NodePhase.OMITTED, "after") in [(e.phase, e.node) for e in events]


def test_retry_strategy_reruns_a_failed_step(tmp_path: Path) -> None:
    counter = tmp_path / "attempts"
    # Fails on its first attempt only.
    flaky = "import pathlib, sys; p = pathlib.Path(sys.argv[1]); n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); sys.exit(0 if n else 1)"
    manifests = workflow(pod("flaky", flaky, str(counter), retryStrategy={"limit": "1"}))
    _run(manifests, tmp_path)
    assert counter.read_text() == "xx"
    without_retry = workflow(pod("flaky", flaky, str(tmp_path / "other")))
    with pytest.raises(WorkflowFailed):
        _run(without_retry, tmp_path)


def test_retry_policy_on_error_does_not_retry_a_step_that_exited_non_zero(tmp_path: Path) -> None:
    counter = tmp_path / "attempts"
    failing = "import sys; open(sys.argv[1], 'a').write('x'); sys.exit(1)"
    strategy = {"limit": 2, "retryPolicy": "OnError"}
    with pytest.raises(WorkflowFailed):
        _run(workflow(pod("failing", failing, str(counter), retryStrategy=strategy)), tmp_path)
    assert counter.read_text() == "x"


def test_output_parameters_of_a_fan_out_are_collected_as_a_json_list(tmp_path: Path) -> None:
    # /tmp/v is a container path: the executor maps it into the pod's sandbox, which is
    # how the value reaches the output parameter.
    echo = pod(
        "echo",
        "import sys; open(sys.argv[2], 'w').write(sys.argv[1])",
        "{{inputs.parameters.v}}",
        "/tmp/v",
        inputs=inputs("v"),
        outputs={"parameters": [{"name": "v", "valueFrom": {"path": "/tmp/v"}}]},
    )
    log = tmp_path / "log"
    manifests = workflow(
        dag(
            "main",
            task("echo", "echo", withItems=["x", "y"], params={"v": "{{item}}"}),
            task("show", "append", depends="echo", params={"msg": "{{tasks.echo.outputs.parameters.v}}"}),
        ),
        echo,
        pod("append", APPEND, str(log), "{{inputs.parameters.msg}}", inputs=inputs("msg")),
    )
    _run(manifests, tmp_path)
    assert json.loads(log.read_text()) == ["x", "y"]


def test_a_dependency_cycle_is_refused(tmp_path: Path) -> None:
    manifests = workflow(
        dag("main", task("a", "noop", depends="b"), task("b", "noop", depends="a")),
        pod("noop", "pass"),
    )
    with pytest.raises(ManifestError, match="cycle"):
        _run(manifests, tmp_path)


def test_unsupported_fields_are_refused_by_name(tmp_path: Path) -> None:
    manifests = workflow(dag("main", task("a", "noop", continueOn={"failed": True})), pod("noop", "pass"))
    with pytest.raises(ManifestError, match="continueOn"):
        _run(manifests, tmp_path)
