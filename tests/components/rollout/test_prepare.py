from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from components.core.config import CONFIG_ENV
from components.core.storage import LocalStore, RunLayout
from components.rollout.cli import prepare_command
from components.rollout.prepare import prepare_iteration


@pytest.fixture
def task_set(make_task, tmp_path: Path) -> Path:
    for name in ("alpha", "beta", "gamma", "delta"):
        make_task(name, workspace="files")
        (tmp_path / "tasks" / name / "files").mkdir()
        (tmp_path / "tasks" / name / "files" / "input.txt").write_text(f"{name}\n")
    return tmp_path / "tasks"


def _config(rollout_config, task_set: Path, per_iteration: int | None = 2, **sections):
    return rollout_config(
        tasks={"source": str(task_set), "per_iteration": per_iteration}, rollout={"samples_per_task": 3}, **sections
    )


def test_prepare_writes_plan_snapshot_and_fanout(rollout_config, task_set: Path, tmp_path: Path) -> None:
    config = _config(rollout_config, task_set)
    store = LocalStore(tmp_path / "store")

    fanout = prepare_iteration(config, 4, store)

    layout = RunLayout(config.name)
    plan = json.loads(store.get_bytes(layout.plan(4)))
    assert plan["iteration"] == 4 and plan["samples_per_task"] == 3 and len(plan["tasks"]) == 2
    assert [r["rollout_id"] for r in plan["rollouts"]] == [f"{t}-s{i}" for t in plan["tasks"] for i in range(3)]
    assert {r["group_id"] for r in plan["rollouts"]} == {f"it4-{t}" for t in plan["tasks"]}
    # The fan-out list carries ids only (Argo caps output parameters).
    assert fanout == [{"rollout_id": r["rollout_id"], "task_id": r["task_id"]} for r in plan["rollouts"]]
    # Exactly the chosen tasks are snapshotted, under deterministic keys.
    snapshot = store.list(f"{config.name}/tasks")
    assert snapshot == sorted(
        f"{layout.task(t)}/{name}" for t in plan["tasks"] for name in ("files/input.txt", "task.yaml", "verify.py")
    )


def test_prepare_is_deterministic(rollout_config, task_set: Path, tmp_path: Path) -> None:
    config = _config(rollout_config, task_set)
    stores = [LocalStore(tmp_path / "one"), LocalStore(tmp_path / "two")]

    fanouts = [prepare_iteration(config, 1, store) for store in stores]

    assert fanouts[0] == fanouts[1]
    assert stores[0].list("") == stores[1].list("")
    for key in stores[0].list(""):
        assert stores[0].get_bytes(key) == stores[1].get_bytes(key)


def test_prepare_rerun_overwrites_the_same_keys(rollout_config, task_set: Path, tmp_path: Path) -> None:
    config = _config(rollout_config, task_set)
    store = LocalStore(tmp_path / "store")
    prepare_iteration(config, 0, store)
    keys = store.list("")

    prepare_iteration(config, 0, store)

    assert store.list("") == keys


def test_prepare_without_per_iteration_uses_every_task(rollout_config, task_set: Path, tmp_path: Path) -> None:
    fanout = prepare_iteration(_config(rollout_config, task_set, None), 0, LocalStore(tmp_path / "store"))
    assert sorted({r["task_id"] for r in fanout}) == ["alpha", "beta", "delta", "gamma"]
    assert len(fanout) == 12


def test_prepare_command_writes_the_fanout_file(
    rollout_config, task_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(rollout_config, task_set, storage={"uri": f"file://{tmp_path / 'store'}"})
    monkeypatch.setenv(CONFIG_ENV, _yaml(config))
    out = tmp_path / "out" / "rollouts.json"

    result = _invoke(["--iteration", "2", "--out", str(out)])

    assert result.exit_code == 0, result.output
    fanout = json.loads(out.read_text())
    assert len(fanout) == 6 and set(fanout[0]) == {"rollout_id", "task_id"}
    assert LocalStore(tmp_path / "store").exists(RunLayout(config.name).plan(2))


def test_prepare_command_reports_a_broken_task(
    rollout_config, task_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (task_set / "beta" / "task.yaml").write_text("id: beta\nprompt: x\n")
    config = _config(rollout_config, task_set)
    monkeypatch.setenv(CONFIG_ENV, _yaml(config))

    result = _invoke(["--iteration", "0", "--out", str(tmp_path / "out.json")])

    assert result.exit_code == 2
    assert "beta/task.yaml" in result.output and "verifier: required field is missing" in result.output
    assert not (tmp_path / "out.json").exists()


def _yaml(config) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True))


def _invoke(args: list[str]):
    import typer

    app = typer.Typer()
    app.command()(prepare_command)
    return CliRunner().invoke(app, args)
