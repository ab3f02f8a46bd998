from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.core.storage import LocalStore, RunLayout
from components.rollout.prepare import fan_out, prepare_iteration


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

    returned = prepare_iteration(config, 4, store, cursor=1)

    layout = RunLayout(config.name)
    plan = json.loads(store.get_bytes(layout.plan(4)))
    assert plan == returned
    assert plan["iteration"] == 4 and plan["samples_per_task"] == 3 and len(plan["tasks"]) == 2
    assert plan["task_cursor"] == 1 and plan["next_task_cursor"] == 3
    assert [r["rollout_id"] for r in plan["rollouts"]] == [f"{t}-s{i}" for t in plan["tasks"] for i in range(3)]
    assert {r["group_id"] for r in plan["rollouts"]} == {f"it4-{t}" for t in plan["tasks"]}
    # The fan-out list carries ids and the pod deadline only (Argo caps output parameters).
    assert fan_out(plan) == [
        {"rollout_id": r["rollout_id"], "task_id": r["task_id"], "deadline_s": r["deadline_s"]} for r in plan["rollouts"]
    ]
    # Exactly the chosen tasks are snapshotted, under deterministic keys.
    snapshot = store.list(f"{config.name}/tasks")
    assert snapshot == sorted(
        f"{layout.task(t)}/{name}" for t in plan["tasks"] for name in ("files/input.txt", "task.yaml", "verify.py")
    )


def test_prepare_is_deterministic(rollout_config, task_set: Path, tmp_path: Path) -> None:
    config = _config(rollout_config, task_set)
    stores = [LocalStore(tmp_path / "one"), LocalStore(tmp_path / "two")]

    plans = [prepare_iteration(config, 1, store) for store in stores]

    assert plans[0] == plans[1]
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
    plan = prepare_iteration(_config(rollout_config, task_set, None), 0, LocalStore(tmp_path / "store"))
    assert sorted({r["task_id"] for r in plan["rollouts"]}) == ["alpha", "beta", "delta", "gamma"]
    assert len(plan["rollouts"]) == 12


def test_pod_deadline_covers_start_up_the_task_time_limit_and_the_verifier(
    rollout_config, task_set: Path, tmp_path: Path
) -> None:
    (task_set / "alpha" / "task.yaml").write_text(
        (task_set / "alpha" / "task.yaml").read_text() + "time_limit_s: 90\n"
    )
    config = _config(rollout_config, task_set, None, cluster={"rollout_startup_s": 200})
    plan = prepare_iteration(config, 0, LocalStore(tmp_path / "store"))
    deadlines = {r["task_id"]: r["deadline_s"] for r in plan["rollouts"]}
    verifier_s = 10  # make_task's verifier timeout
    assert deadlines["alpha"] == 90 + verifier_s + 200
    assert deadlines["beta"] == config.rollout.time_limit_s + verifier_s + 200


def _offer_choices(task_set: Path, name: str) -> None:
    task_yaml = task_set / name / "task.yaml"
    task_yaml.write_text(task_yaml.read_text() + 'choices:\n  - - content: "yes"\n    - content: "no"\n')


def test_choice_mode_stores_the_book_of_the_chosen_tasks(rollout_config, task_set: Path, tmp_path: Path) -> None:
    from components.core.choices import load_choice_book

    for name in ("alpha", "beta", "gamma"):
        _offer_choices(task_set, name)
    config = _config(rollout_config, task_set, per_iteration=None, engine={"dev_mode": "choice"})
    store = LocalStore(tmp_path / "store")

    plan = prepare_iteration(config, 0, store)

    key = RunLayout(config.name).choices(0)
    (tmp_path / "book.json").write_bytes(store.get_bytes(key))
    book = load_choice_book(tmp_path / "book.json")
    assert sorted(t.task_id for t in book.tasks) == ["alpha", "beta", "gamma"]  # delta offers none: sampled freely
    assert set(plan["tasks"]) == {"alpha", "beta", "gamma", "delta"}
    assert all(t.match == f"do {t.task_id}" and [c.content for c in t.turns[0]] == ["yes", "no"] for t in book.tasks)


def test_choice_mode_on_tasks_without_choices_is_refused_naming_the_fix(
    rollout_config, task_set: Path, tmp_path: Path
) -> None:
    from components.rollout.prepare import NoChoicesError

    config = _config(rollout_config, task_set, engine={"dev_mode": "choice"})
    with pytest.raises(NoChoicesError, match=r"none of this iteration's tasks .* add `choices:`"):
        prepare_iteration(config, 0, LocalStore(tmp_path / "store"))


def test_sampling_mode_stores_no_book(rollout_config, task_set: Path, tmp_path: Path) -> None:
    _offer_choices(task_set, "alpha")
    config = _config(rollout_config, task_set)
    store = LocalStore(tmp_path / "store")
    prepare_iteration(config, 0, store)
    assert not store.exists(RunLayout(config.name).choices(0))


def _recording(rollout_config, task_set: Path, error_rate: float):
    from pipelines.evaluate import eval_config

    config = _config(rollout_config, task_set, per_iteration=None, teacher={"kind": "reference", "error_rate": error_rate})
    return eval_config(config, "base", eval_id="rec", recording=True)


def test_a_reference_teacher_stores_each_tasks_reference_first_and_its_errors_after(
    rollout_config, task_set: Path, tmp_path: Path
) -> None:
    from components.core.choices import load_choice_book

    for name in ("alpha", "beta", "gamma", "delta"):
        task_yaml = task_set / name / "task.yaml"
        task_yaml.write_text(task_yaml.read_text() + 'reference:\n  - content: "yes"\n  - content: "bye"\n')
    _offer_choices(task_set, "alpha")  # its first turn may also answer "no": the teacher's error
    store = LocalStore(tmp_path / "store")

    prepare_iteration(_recording(rollout_config, task_set, 0.25), 0, store)

    (tmp_path / "book.json").write_bytes(store.get_bytes(RunLayout("rollout-test", "rec").choices(0)))
    book = load_choice_book(tmp_path / "book.json")
    assert book.error_rate == 0.25
    turns = {t.task_id: [[c.content for c in turn] for turn in t.turns] for t in book.tasks}
    assert turns == {"alpha": [["yes", "no"], ["bye"]], **{n: [["yes"], ["bye"]] for n in ("beta", "gamma", "delta")}}


def test_a_reference_teacher_refuses_tasks_without_a_reference_naming_them(
    rollout_config, task_set: Path, tmp_path: Path
) -> None:
    from components.rollout.prepare import NoChoicesError

    with pytest.raises(NoChoicesError, match=r"tasks \['alpha', 'beta', 'delta', 'gamma'\] .* no `reference:` turns"):
        prepare_iteration(_recording(rollout_config, task_set, 0.0), 0, LocalStore(tmp_path / "store"))
