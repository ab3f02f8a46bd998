"""The web task suite without a browser: folders as generated, seeded worlds, web.yaml errors,
the state endpoint's guard, and a verifier that cannot judge saying so."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests._choice_pages import browser_use_book, page_listing, resolved_turn
from tests.components.environments._verify import run_verifier

from components.environments import WebTaskError, start_web_task
from components.environments.web_tasks import SUITE, WebTaskSpec, load_web_spec, task_files, task_id
from components.environments.webapps import APPS, shop
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


def _actions(candidate) -> list[dict]:
    return json.loads(candidate.content)["action"]


def test_candidate_turns_are_right_or_make_one_slip() -> None:
    """The first candidate of a choice does what the goal asks, the second differs in one slip."""
    tasks = {task.id: task for task in load_task_set(WEB_TASKS)}
    assert all(task.choices for task in tasks.values()), "every seeded web task offers candidates"
    for task in tasks.values():
        goal = json.loads((task.task_dir / "goal.json").read_text())
        assert list(_actions(_resolved(task.choices[-1][0]))[0]) == ["done"]  # browser-use's end, alone in its step
        chosen = [turn for turn in task.choices if len(turn) > 1]
        assert len(chosen) == 1 and len(chosen[0]) == 2, task.id
        right, wrong = (c.content for c in chosen[0])
        if "answer_contains" in goal:
            assert goal["answer_contains"] in right and any(code in wrong for code in goal["answer_excludes"])
        elif "submissions" in goal["state"]:
            radio = "{{element:<input type=radio name=size value=%s}}" % goal["state"]["submissions"][0]["size"]
            assert radio in right and radio not in wrong
        elif "orders" in goal["state"]:  # the shop: the right link is the cheapest product's of the kind
            (line,) = goal["state"]["orders"][0]["items"]
            names = {item.id: item.name for item in shop.build_world(load_web_spec(task.task_dir).seed).items}
            link = "{{element:<a /> %s}}" % names[line["id"]]
            assert link in right and link not in wrong
        else:  # the booking: the right link is the cheapest flight's
            link = "{{element:<a /> Select %s}}" % goal["state"]["bookings"][0]["flight"]
            assert link in right and link not in wrong


def _resolved(candidate):
    return resolved_turn([candidate])[0]


def test_the_right_candidate_and_the_slip_differ_in_words_not_only_in_element_numbers() -> None:
    """Element numbers move between browsers: what a policy learns of them it cannot use
    again, so the candidates' ``next_goal`` must already tell them apart."""
    for task in load_task_set(WEB_TASKS):
        for turn in (t for t in task.choices if len(t) > 1):
            goals = [json.loads(_resolved(c).content)["next_goal"] for c in turn]
            answers = [json.dumps(_actions(_resolved(c))) for c in turn if "done" in _actions(_resolved(c))[0]]
            assert len(set(goals)) == len(goals) or len(set(answers)) == len(turn), (task.id, goals)


def test_every_candidate_fits_the_example_configs_max_tokens() -> None:
    """The engine cuts a candidate at ``max_tokens`` (docs/engine.md), and browser-use cannot
    parse a cut JSON: the longest, its elements numbered with four digits, must fit."""
    from components.core.config import load_config
    from components.engine._tokenizer_build import build_tokenizer

    limit = load_config(WEB_TASKS.parents[1] / "web.yaml").harness.max_tokens
    tokenizer = build_tokenizer()
    for task in load_task_set(WEB_TASKS):
        for turn in task.choices:
            for candidate in turn:
                four_digits = candidate.content.count("{{element:")  # page_listing numbers with three
                cost = len(tokenizer.encode(_resolved(candidate).content, add_special_tokens=False)) + four_digits + 1
                assert cost <= limit, f"{task.id}: a candidate of {cost} tokens (end included), max_tokens {limit}"


def test_the_choice_book_finds_a_web_task_in_browser_use_requests_whatever_the_port() -> None:
    """The prompt reaches browser-use with {web_url} filled in, a new port per rollout, and
    browser-use states the step instead of sending assistant turns."""
    tasks = [task for task in load_task_set(WEB_TASKS) if task.choices]
    book = browser_use_book([t.choice_entry() for t in tasks])
    for task in tasks:
        for port, step in ((41234, 1), (5173, len(task.choices))):
            prompt = task.prompt.replace("{web_url}", f"http://127.0.0.1:{port}")
            turn = task.choices[step - 1]
            request = (
                f"<|im_start|>user\n<user_request>\n{prompt}\n</user_request>\n<agent_history>\nAgent initialized\n"
                f"</agent_history>\n<step_info>Step{step} maximum:4\nToday:2026-12-02</step_info>\n"
                f"{page_listing(turn)}<|im_end|>"
            )
            assert book.candidates(request, 0) == (task.id, step - 1, resolved_turn(turn)), (task.id, port)
