"""WebVoyager and Online-Mind2Web task lists as web tasks: the shipped examples become tasks the
loader accepts, a rerun writes the same files, a bad entry is named with its field and fix, the
static site serves its pages and nothing else, and the answer verifier judges by containment.

The rollouts of these tasks through the runner are in tests/components/rollout/test_runner_suites.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.components.environments._verify import run_verifier
from tests.components.environments.suites._examples import SOURCES, SUITES, write_example
from typer.testing import CliRunner

from components.environments.cli import tasks_app
from components.environments.static_site import StaticSiteSpec, resolve
from components.environments.suites.common import SuiteError
from components.environments.suites.mind2web import mind2web_folders
from components.environments.suites.webvoyager import webvoyager_folders
from components.environments.web_tasks import WebTaskError, load_web_spec, start_web_task
from components.environments.webapps.server import TOKEN_HEADER
from components.rollout.tasks import load_task_set

ANSWER_VERIFIER = Path(__file__).resolve().parents[4] / "components/environments/suites/answer_verify.py"
IDS = {
    "webvoyager": ["webvoyager-dictionary-3", "webvoyager-recipes-0"],
    "mind2web": ["mind2web-5c7d0e7a9f1b4b3c8e2a6d4f1b9c0a7e", "mind2web-e41f2b8c6a3d4c5e9f0a1b2c3d4e5f60"],
}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("suite", sorted(IDS))
def test_shipped_examples_become_web_tasks_the_task_loader_accepts(tmp_path: Path, suite: str) -> None:
    written = write_example(suite, tmp_path / "out")

    tasks = load_task_set(tmp_path / "out")
    assert [task.id for task in tasks] == IDS[suite] and len(written) == 2
    for task in tasks:
        assert task.web == StaticSiteSpec(app="static", pages="site", start="/")
        assert "{web_url} (an offline copy of it)" in task.prompt and ".example." in task.prompt
        assert (task.task_dir / "verify.py").read_text() == ANSWER_VERIFIER.read_text()
        assert (task.task_dir / "site" / "index.html").is_file()
        assert json.loads((task.task_dir / "goal.json").read_text())["includes"]


def test_a_rerun_replaces_each_folder_whole_and_writes_the_same_files(tmp_path: Path) -> None:
    write_example("webvoyager", tmp_path / "a")
    before = _tree(tmp_path / "a")
    folder = tmp_path / "a" / "webvoyager-recipes-0"
    (folder / "site" / "stale.html").write_text("from an earlier run")
    (folder / "task.yaml").write_text("edited by hand")

    write_example("webvoyager", tmp_path / "a")
    write_example("webvoyager", tmp_path / "b")

    assert _tree(tmp_path / "a") == before == _tree(tmp_path / "b")


@pytest.mark.parametrize(
    ("task", "answer", "passed"),
    [
        ("webvoyager-recipes-0", "Vegetarian Four Cheese Lasagna: 4.6 stars (181 reviews), serves 8.", True),
        ("webvoyager-recipes-0", "the  vegetarian FOUR cheese\nlasagna", True),  # case and spacing do not matter
        ("webvoyager-recipes-0", "Spinach Lasagna, 4.3 stars", False),
        ("webvoyager-recipes-0", "Vegetarian Four Cheese Lasagna or Spinach Lasagna", False),  # an excluded one
        ("webvoyager-dictionary-3", "Ephemeral is an adjective: lasting for a very short time.", True),
        ("webvoyager-dictionary-3", "An adjective meaning seeming to be everywhere.", False),
        ("webvoyager-dictionary-3", "", False),
    ],
)
def test_the_verifier_checks_the_final_answer_contains_the_reference(
    webvoyager_tasks: Path, tmp_path: Path, task: str, answer: str, passed: bool
) -> None:
    assert run_verifier(webvoyager_tasks / task, tmp_path, {}, answer) == (passed, float(passed))


def test_the_verifier_cannot_judge_without_the_answer_file(webvoyager_tasks: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENFORGE_FINAL_ANSWER"}
    verify = webvoyager_tasks / "webvoyager-recipes-0" / "verify.py"
    result = subprocess.run(["python3", str(verify)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    # Exit 2: the runner records a verifier that cannot judge as verifier_error, not as a failed agent.
    assert result.returncode == 2 and "OPENFORGE_FINAL_ANSWER is not set" in result.stderr


@pytest.fixture(scope="module")
def webvoyager_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("webvoyager")
    write_example("webvoyager", out)
    return out


def _edit_json_line(line: int, **changes: object) -> Callable[[str], str]:
    def edit(text: str) -> str:
        lines = text.splitlines()
        entry = json.loads(lines[line - 1])
        for key, value in changes.items():
            if value is None:
                entry.pop(key)
            else:
                entry[key] = value
        lines[line - 1] = json.dumps(entry)
        return "\n".join(lines) + "\n"

    return edit


def _replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new)

    return edit


@pytest.mark.parametrize(
    ("file", "edit", "message"),
    [
        ("tasks.jsonl", lambda text: text + "{not json\n", r"tasks.jsonl line 3: not valid JSON"),
        ("tasks.jsonl", _edit_json_line(2, ques=None), r"tasks.jsonl line 2: ques: required field is missing"),
        ("tasks.jsonl", _edit_json_line(1, id="Recipes-0"), r"line 1: id: 'Recipes-0' does not end in --<number>"),
        (
            "tasks.jsonl",
            _edit_json_line(1, id="Recipes--7"),
            r"line 1: no reference answers for task 'Recipes--7' in .*reference_answer.json \(looked for id 7",
        ),
        (
            "tasks.jsonl",
            _edit_json_line(2, web="https://www.other.example/words"),
            r"line 2: no pages for https://www.other.example in .*sites.yaml \(it has "
            r"https://dictionary.example.org, https://recipes.example.com\); add the site's origin",
        ),
        (
            "reference_answer.json",
            _replace('"includes": ["adjective", "short time"], ', ""),
            r"'Dictionary' answer id 3\): a 'possible' answer is one right answer of many.*add \"includes\"",
        ),
        (
            "reference_answer.json",
            _replace('"excludes": ["Spinach', '"exclude": ["Spinach'),
            r"reference_answer.json: Recipes.answers.0.exclude: unknown field",
        ),
        ("sites.yaml", _replace("https://recipes.example.com:", "https://recipes.example.com/recipes:"),
         r"sites.yaml: 'https://recipes.example.com/recipes' is not an origin"),
        ("sites.yaml", _replace("sites/recipes", "sites/missing"), r"sites.yaml: https://recipes.example.com: no folder"),
    ],
)
def test_a_bad_webvoyager_entry_is_named_with_its_field_and_fix(
    tmp_path: Path, file: str, edit: Callable[[str], str], message: str
) -> None:
    source = _copy_example("webvoyager", tmp_path)
    (source / file).write_text(edit((source / file).read_text()))

    with pytest.raises(SuiteError, match=message):
        webvoyager_folders(source / "tasks.jsonl", source / "reference_answer.json", source / "sites.yaml", "cmd")


@pytest.mark.parametrize(
    ("file", "edit", "message"),
    [
        (
            "Online_Mind2Web.json",
            _replace('"website": "https://rail.example.net/",', ""),
            r"Online_Mind2Web.json \[1\]: website: required field is missing",
        ),
        (
            "answers.json",
            _replace('"5c7d0e7a9f1b4b3c8e2a6d4f1b9c0a7e": {"includes": ["10:00", "16:00"]},', ""),
            r"Online_Mind2Web.json \[0\]: task '5c7d0e7a9f1b4b3c8e2a6d4f1b9c0a7e' has no answer in .*answers.json",
        ),
        (
            "answers.json",
            _replace('{"includes": ["07:42"]', '{"includes": []'),
            r"answers.json: e41f2b8c6a3d4c5e9f0a1b2c3d4e5f60.includes: List should have at least 1 item",
        ),
        ("Online_Mind2Web.json", lambda text: "{}", r"Online_Mind2Web.json: must be a non-empty JSON list"),
    ],
)
def test_a_bad_mind2web_entry_is_named_with_its_field_and_fix(
    tmp_path: Path, file: str, edit: Callable[[str], str], message: str
) -> None:
    source = _copy_example("mind2web", tmp_path)
    (source / file).write_text(edit((source / file).read_text()))

    with pytest.raises(SuiteError, match=message):
        mind2web_folders(source / "Online_Mind2Web.json", source / "answers.json", source / "sites.yaml", "cmd")


def _copy_example(suite: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(SUITES / suite, tmp_path / suite))


def test_the_command_refuses_a_bad_source_with_the_message_and_writes_nothing(tmp_path: Path) -> None:
    source = _copy_example("webvoyager", tmp_path)
    (source / "tasks.jsonl").write_text((source / "tasks.jsonl").read_text() + '{"web_name": "Recipes"}\n')

    result = CliRunner().invoke(tasks_app, ["webvoyager", str(source / "tasks.jsonl"), str(tmp_path / "out")])

    assert result.exit_code == 2
    assert "tasks.jsonl line 3: id: required field is missing" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_the_command_takes_answers_and_sites_from_elsewhere(tmp_path: Path) -> None:
    source = tmp_path / "list.jsonl"
    shutil.copyfile(SOURCES["webvoyager"], source)
    elsewhere = SUITES / "webvoyager"
    args = ["--answers", str(elsewhere / "reference_answer.json"), "--sites", str(elsewhere / "sites.yaml")]

    result = CliRunner().invoke(tasks_app, ["webvoyager", str(source), str(tmp_path / "out"), *args])

    assert result.exit_code == 0, result.output
    assert [task.id for task in load_task_set(tmp_path / "out")] == IDS["webvoyager"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app: static\npages: ../elsewhere\n", r"pages: pages '../elsewhere' must be a folder inside the task folder"),
        ("app: static\npages: nowhere\n", r"pages: no folder 'nowhere' in the task folder"),
        ("app: static\npages: site\nstart: index.html\n", r"start: start 'index.html' must be a path on the site"),
        ("app: static\npages: site\nseed: 1\n", r"seed: unknown field \(misspelled\? fields: .*for app: static, app, pages, start"),
        ("app: cinema\n", r"app: 'cinema' is not an app; set it to one of shop, form, flights, miniwob, static"),
    ],
)
def test_a_bad_static_web_yaml_names_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "web.yaml").write_text(text)
    with pytest.raises(WebTaskError, match=f"{tmp_path / 'web.yaml'}: {message}"):
        load_web_spec(tmp_path)


def test_the_static_site_serves_its_pages_and_nothing_else(webvoyager_tasks: Path) -> None:
    task_dir = webvoyager_tasks / "webvoyager-recipes-0"
    with start_web_task(task_dir) as web:
        assert web.url.startswith("http://127.0.0.1:") and web.url.endswith("/")
        with urllib.request.urlopen(web.url, timeout=5) as page:
            assert b"Lasagna recipes" in page.read()
        with urllib.request.urlopen(web.url + "recipe/spinach-lasagna.html", timeout=5) as page:
            assert b"4.3 stars" in page.read()
        for missing in ("recipe/none.html", "recipe", "%2e%2e/task.yaml"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(web.url + missing, timeout=5)
            assert refused.value.code == 404, missing
        # The state endpoint is still the app's, behind its token.
        request = urllib.request.Request(web.app.state_url, headers={TOKEN_HEADER: web.app.token})
        with urllib.request.urlopen(request, timeout=5) as resp:
            assert json.loads(resp.read()) == {}


def test_resolve_stays_inside_the_site(tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "index.html").write_text("home")
    (root / "docs" / "index.html").write_text("docs")
    (tmp_path / "secret.txt").write_text("not served")
    root = root.resolve()

    assert resolve(root, "/") == root / "index.html"
    assert resolve(root, "/docs/") == root / "docs" / "index.html"
    assert resolve(root, "../secret.txt") is None
    assert resolve(root, "/docs/../../secret.txt") is None
    assert resolve(root, "/missing.html") is None
