"""The web task suite without a browser: folders as generated, seeded worlds, web.yaml errors,
the state endpoint's guard, and a verifier that cannot judge saying so."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.components.environments._verify import run_verifier

from components.environments import WebTaskError, start_web_task
from components.environments.web_tasks import SUITE, WebTaskSpec, load_web_spec, task_files, task_id
from components.environments.webapps import APPS
from components.environments.webapps.server import TOKEN_HEADER
from components.rollout.tasks import load_task_set

WEB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "web"


def test_checked_in_folders_are_what_the_generator_writes() -> None:
    expected = {task_id(WebTaskSpec(app=a, seed=s, goal=g)) for a, s, g in SUITE}
    assert {p.name for p in WEB_TASKS.iterdir() if p.is_dir()} == expected
    for app, seed, goal in SUITE:
        spec = WebTaskSpec(app=app, seed=seed, goal=goal)
        folder = WEB_TASKS / task_id(spec)
        for name, text in task_files(spec).items():
            assert (folder / name).read_text() == text, f"{folder / name} is stale: rerun the generator"
        assert load_web_spec(folder) == spec


def test_suite_loads_as_ordinary_tasks_with_the_url_placeholder() -> None:
    tasks = load_task_set(WEB_TASKS)
    assert len(tasks) == len(SUITE)
    assert all("{web_url}" in task.prompt for task in tasks)


@pytest.mark.parametrize("app", sorted(APPS))
def test_the_seed_decides_the_world(app: str) -> None:
    module = APPS[app]
    assert module.build_world(1) == module.build_world(1)
    assert module.build_world(1) != module.build_world(2)
    prompts = {goal.prompt for seed in range(6) for goal in module.goals(module.build_world(seed)).values()}
    assert len(prompts) >= 5  # names, items or routes differ from seed to seed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app: shop\nseed: 1\ngoal: book\n", "goal 'book' is not one of the shop app's goals: checkout"),
        ("app: cinema\nseed: 1\ngoal: x\n", "app: 'cinema' is not an app; set it to one of shop, form, flights, miniwob, static"),
        ("app: form\nseed: 1\ngoal: submit\nport: 8\n", r"port: unknown field \(misspelled\? fields: app, seed, goal"),
    ],
)
def test_bad_web_yaml_names_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "web.yaml").write_text(text)
    with pytest.raises(WebTaskError, match=f"{tmp_path / 'web.yaml'}: .*{message}"):
        load_web_spec(tmp_path)


def test_a_task_without_web_yaml_starts_nothing(tmp_path: Path) -> None:
    assert start_web_task(tmp_path) is None


def test_state_endpoint_needs_the_token_and_the_prompt_gets_the_url(tmp_path: Path) -> None:
    task_dir = WEB_TASKS / "web-form-submit-1"
    with start_web_task(task_dir) as web:
        assert web.url.startswith("http://127.0.0.1:")
        assert web.render_prompt("Open {web_url} now") == f"Open {web.url} now"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(web.app.state_url, timeout=5)
        assert refused.value.code == 403
        request = urllib.request.Request(web.app.state_url, headers={TOKEN_HEADER: web.app.token})
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert json.loads(resp.read()) == {"submissions": []}
        # Nothing submitted: a verdict, and it is "failed".
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == (False, 0.0)
        env = web.verifier_env()
    # The app is gone, or the runner passed no variables: the verifier cannot judge (exit 2).
    with pytest.raises(ValueError, match="exited with code 2"):
        run_verifier(task_dir, tmp_path, env)
    with pytest.raises(ValueError, match="exited with code 2"):
        run_verifier(task_dir, tmp_path, {})
