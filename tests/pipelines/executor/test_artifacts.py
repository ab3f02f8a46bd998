"""Artifacts through the configured store (file:// and a real S3 protocol server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.storage import ArtifactStore
from pipelines.executor import ExecutorOptions, NodeEvent, NodePhase, WorkflowFailed, execute_workflow
from tests.pipelines.executor.manifests import dag, inputs, pod, task, workflow

# Copies the task folder's prompt into the outcome, writes two "images" (one the same in
# every rollout, as a proxy's image store would), then exits with argv[3].
_ROLLOUT = (
    "import pathlib, sys; out = pathlib.Path(sys.argv[2]); out.parent.mkdir(parents=True, exist_ok=True); "
    "prompt = pathlib.Path(sys.argv[1], 'prompt.txt').read_text(); out.write_text(prompt.upper()); "
    "images = out.parents[1] / 'trajectories' / 'images'; "
    "images.mkdir(parents=True); (images / 'shared.png').write_text('same'); "
    "(images / (prompt[-1] + '.png')).write_text(prompt); sys.exit(int(sys.argv[3]))"
)


def _rollout_flow(exit_code: str = "0") -> list[dict]:
    rollout = pod(
        "rollout",
        _ROLLOUT,
        "/work/task",
        "/work/out/outcome.json",
        exit_code,
        inputs={
            **inputs("rollout-id", "task-id"),
            "artifacts": [{"name": "task", "path": "/work/task", "s3": {"key": "run/tasks/{{inputs.parameters.task-id}}"}}],
        },
        outputs={
            "artifacts": [
                {"name": "outcome", "path": "/work/out/outcome.json",
                 "s3": {"key": "run/outcomes/{{inputs.parameters.rollout-id}}.json"}},
                {"name": "trajectory", "path": "/work/trajectories/{{inputs.parameters.rollout-id}}.jsonl",
                 "s3": {"key": "run/trajectories/{{inputs.parameters.rollout-id}}.jsonl"}, "optional": True},
                {"name": "images", "path": "/work/trajectories/images", "s3": {"key": "run/trajectories/images"},
                 "optional": True},
            ]
        },  # fmt: skip
        container={"volumeMounts": [{"name": "work", "mountPath": "/work"}]},
        volumes=[{"name": "work", "emptyDir": {}}],
    )
    main = dag(
        "main",
        task(
            "rollout",
            "rollout",
            withParam="{{workflow.parameters.rollouts}}",
            params={"rollout-id": "{{item.rollout_id}}", "task-id": "{{item.task_id}}"},
        ),
    )
    return workflow(main, rollout, parameters={"rollouts": '[{"rollout_id": "a-s0", "task_id": "a"}, {"rollout_id": "b-s0", "task_id": "b"}]'})


def _seed_tasks(store: ArtifactStore) -> None:
    for task_id in ("a", "b"):
        store.put_bytes(f"run/tasks/{task_id}/prompt.txt", f"prompt of {task_id}".encode())
        store.put_bytes(f"run/tasks/{task_id}/sub/verify.py", b"print('ok')")


def _run(store: ArtifactStore, manifests, tmp_path: Path, events: list[NodeEvent] | None = None, **options) -> None:
    execute_workflow(
        manifests,
        parameters={},
        store=store,
        workdir=tmp_path / "exec",
        options=ExecutorOptions(cwd=tmp_path, **options),
        observer=(events.append if events is not None else lambda e: None),
    )


def test_input_folder_and_output_file_round_trip_through_the_store(any_store: ArtifactStore, tmp_path: Path) -> None:
    _seed_tasks(any_store)
    _run(any_store, _rollout_flow(), tmp_path)
    assert any_store.get_bytes("run/outcomes/a-s0.json") == b"PROMPT OF A"
    assert any_store.get_bytes("run/outcomes/b-s0.json") == b"PROMPT OF B"
    # An output folder lands file by file under its key; both pods' folders merge there.
    assert sorted(any_store.list("run/trajectories/images/")) == [f"run/trajectories/images/{n}.png" for n in ("a", "b", "shared")]
    assert any_store.get_bytes("run/trajectories/images/b.png") == b"prompt of b"
    # The optional trajectory was never written: no object, no failure.
    assert not any_store.exists("run/trajectories/a-s0.jsonl")


def test_outputs_are_uploaded_even_when_the_step_fails(any_store: ArtifactStore, tmp_path: Path) -> None:
    _seed_tasks(any_store)
    with pytest.raises(WorkflowFailed, match="exit code 2"):
        _run(any_store, _rollout_flow(exit_code="2"), tmp_path)
    assert any_store.get_bytes("run/outcomes/a-s0.json") == b"PROMPT OF A"


def test_missing_input_artifact_fails_the_step_with_its_key(any_store: ArtifactStore, tmp_path: Path) -> None:
    with pytest.raises(WorkflowFailed, match="input artifact 'task': nothing at .*run/tasks/a"):
        _run(any_store, _rollout_flow(), tmp_path)


def test_missing_required_output_fails_the_step(tmp_path: Path, any_store: ArtifactStore) -> None:
    _seed_tasks(any_store)
    manifests = _rollout_flow()
    manifests[0]["spec"]["templates"][1]["container"]["args"][1] = "/work/out/elsewhere.json"
    with pytest.raises(WorkflowFailed, match="output artifact outcome .* was not written"):
        _run(any_store, manifests, tmp_path)


def test_pods_whose_outputs_exist_are_skipped_on_rerun(tmp_path: Path, any_store: ArtifactStore) -> None:
    _seed_tasks(any_store)
    any_store.put_bytes("run/outcomes/a-s0.json", b"from an earlier run")
    events: list[NodeEvent] = []
    _run(any_store, _rollout_flow(), tmp_path, events, skip_existing_outputs=True)
    phases = {e.node: e.phase for e in events if e.node.startswith("rollout(")}
    assert phases == {"rollout(0)": NodePhase.SKIPPED, "rollout(1)": NodePhase.SUCCEEDED}
    assert any_store.get_bytes("run/outcomes/a-s0.json") == b"from an earlier run"
