from __future__ import annotations

from pathlib import Path

import pytest

from components.core.storage import LocalStore, put_dir
from components.rollout.tasks import TaskError, load_task, load_task_set, select_tasks

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("task_set", ["quickstart", "dense"])
def test_example_task_sets_load(task_set: str) -> None:
    tasks = load_task_set(REPO / "examples" / "tasks" / task_set)
    assert len(tasks) >= 3
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    for task in tasks:
        assert (task.task_dir / "verify.py").is_file()


def test_web_tasks_load_with_their_app(tmp_path: Path) -> None:
    tasks = load_task_set(REPO / "examples" / "tasks" / "web")
    assert {(t.id, t.web.app) for t in tasks if t.web} == {(t.id, t.id.split("-")[1]) for t in tasks}
    assert load_task(REPO / "examples" / "tasks" / "quickstart" / "write-hello").web is None


def test_bad_web_yaml_fails_the_task_load(make_task) -> None:
    task_dir = make_task("web-bad")
    (task_dir / "web.yaml").write_text("app: form\nseed: 1\ngoal: checkout\n")
    with pytest.raises(TaskError, match=r"web\.yaml: .*goal 'checkout' is not one of the form app's goals: submit"):
        load_task(task_dir)


def test_web_section_in_task_yaml_points_to_web_yaml(make_task) -> None:
    task_dir = make_task("web-inline", web={"app": "form", "seed": 1, "goal": "submit"})
    with pytest.raises(TaskError, match="web: belongs in .*web.yaml"):
        load_task(task_dir)


def test_desktop_tasks_load_with_their_apps() -> None:
    tasks = load_task_set(REPO / "examples" / "tasks" / "desktop")
    assert len(tasks) >= 3 and all(t.desktop is not None and t.desktop.apps and t.web is None for t in tasks)
    assert tasks[0].desktop.apps[0].window and (tasks[0].desktop.width, tasks[0].desktop.height) == (1280, 800)
    assert load_task(REPO / "examples" / "tasks" / "quickstart" / "write-hello").desktop is None


def test_bad_desktop_yaml_fails_the_task_load(make_task) -> None:
    task_dir = make_task("desktop-bad")
    (task_dir / "desktop.yaml").write_text("apps:\n  - argv: []\n")
    with pytest.raises(TaskError, match=r"desktop\.yaml: .*apps\.0\.argv"):
        load_task(task_dir)
    with pytest.raises(TaskError, match="desktop: belongs in .*desktop.yaml"):
        load_task(make_task("desktop-inline", desktop={"apps": []}))


def test_missing_verifier_names_file_field_and_fix(make_task) -> None:
    task_dir = make_task("no-verifier", verifier=None)
    with pytest.raises(TaskError) as err:
        load_task(task_dir)
    message = str(err.value)
    assert str(task_dir / "task.yaml") in message
    assert "verifier: required field is missing" in message
    assert "add verifier:" in message


def test_missing_workspace_folder_is_reported(make_task) -> None:
    task_dir = make_task("no-workspace", workspace="files")
    with pytest.raises(TaskError, match=r"workspace folder .*files does not exist; create it or remove"):
        load_task(task_dir)


def test_workspace_outside_the_task_folder_is_refused(make_task) -> None:
    task_dir = make_task("escape", workspace="..")
    with pytest.raises(TaskError, match="leaves the task folder"):
        load_task(task_dir)


def test_misspelled_field_is_refused(make_task) -> None:
    task_dir = make_task("typo", time_limit=5)
    with pytest.raises(TaskError, match="time_limit: unknown field"):
        load_task(task_dir)


def test_empty_verifier_command_gets_a_fix(make_task) -> None:
    task_dir = make_task("empty-cmd", verifier={"command": []})
    with pytest.raises(TaskError, match=r"verifier.command: .*set verifier.command to a non-empty list"):
        load_task(task_dir)


def test_id_must_equal_the_folder_name(make_task) -> None:
    task_dir = make_task("folder-name", id="other-name")
    with pytest.raises(TaskError, match="differs from the folder name 'folder-name'"):
        load_task(task_dir)


def test_bad_task_id_is_refused(make_task) -> None:
    task_dir = make_task("Bad_Id")
    with pytest.raises(TaskError, match="is not allowed: use lower-case letters"):
        load_task(task_dir)


def test_missing_task_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tasks" / "empty").mkdir(parents=True)
    with pytest.raises(TaskError, match=r"empty/task.yaml: no task file"):
        load_task_set(tmp_path / "tasks")


def test_missing_task_set_folder_is_reported(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no such folder; set tasks.source"):
        load_task_set(tmp_path / "nowhere")


def test_task_set_without_tasks_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no task folders found"):
        load_task_set(tmp_path)


def test_verifier_placeholders_are_filled_literally(make_task, tmp_path: Path) -> None:
    command = ["python3", "{task_dir}/verify.py", "--in", "{workspace}", '{"reward": 1}']
    task = load_task(make_task("placeholders", verifier={"command": command}))
    argv = task.verifier_argv(tmp_path / "ws")
    assert argv == ["python3", f"{task.task_dir}/verify.py", "--in", str(tmp_path / "ws"), '{"reward": 1}']


def test_task_set_loads_through_a_store(tmp_path: Path, make_task) -> None:
    make_task("alpha", workspace="files")
    (tmp_path / "tasks" / "alpha" / "files").mkdir()
    (tmp_path / "tasks" / "alpha" / "files" / "data.txt").write_text("x")
    make_task("beta")
    store = LocalStore(tmp_path / "bucket" / "task-set")
    put_dir(store, "alpha", tmp_path / "tasks" / "alpha")
    put_dir(store, "beta", tmp_path / "tasks" / "beta")

    tasks = load_task_set("s3://ignored/prefix", store=store, cache_dir=tmp_path / "cache")

    assert [t.id for t in tasks] == ["alpha", "beta"]
    assert (tasks[0].workspace_dir / "data.txt").read_text() == "x"
    assert tasks[0].task_dir.is_relative_to(tmp_path / "cache")


def test_task_set_loads_from_s3(tmp_path: Path, make_task, monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    import moto

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    make_task("gamma")
    with moto.mock_aws():
        boto3.client("s3").create_bucket(Bucket="tasks")
        from components.core.storage import open_store

        put_dir(open_store("s3://tasks/sets/demo"), "gamma", tmp_path / "tasks" / "gamma")
        tasks = load_task_set("s3://tasks/sets/demo", cache_dir=tmp_path / "cache")
    assert [t.id for t in tasks] == ["gamma"]
    assert tasks[0].prompt == "do gamma"


def test_selection_walks_the_whole_set_before_repeating_a_task(make_task, tmp_path: Path) -> None:
    for i in range(8):
        make_task(f"t{i}")
    tasks = load_task_set(tmp_path / "tasks")

    cursor, seen = 0, []
    for _ in range(4):  # two epochs of 8 tasks, 3 per slice (the last slice crosses an epoch)
        chosen, cursor = select_tasks(tasks, 3, seed=1, cursor=cursor)
        ids = [t.id for t in chosen]
        assert len(ids) == 3 and ids == sorted(ids) and len(set(ids)) == 3
        seen += ids
    assert sorted(seen[:6]) == sorted(set(seen[:6])), "a task came twice within the first epoch"
    assert {t.id for t in tasks} <= set(seen[:9])
    assert cursor >= 12


def test_selection_depends_only_on_seed_and_cursor(make_task, tmp_path: Path) -> None:
    for i in range(8):
        make_task(f"t{i}")
    tasks = load_task_set(tmp_path / "tasks")

    assert select_tasks(tasks, 3, seed=1, cursor=5) == select_tasks(tasks, 3, seed=1, cursor=5)
    assert select_tasks(tasks, 3, seed=1, cursor=0) != select_tasks(tasks, 3, seed=2, cursor=0)
    everything = select_tasks(tasks, None, seed=1, cursor=4)
    assert [t.id for t in everything.tasks] == [t.id for t in tasks] and everything.next_cursor == 12
    assert len(select_tasks(tasks, 20, seed=1, cursor=0).tasks) == 8
