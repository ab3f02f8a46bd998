"""MiniWoB pages served from the miniwob package, driven through real Chromium (Playwright):
the page's reward reaches the task's own verify.py through the state endpoint, the seed
fixes the episode, and MiniWoB's 10 s episode timer no longer ends a slow agent's episode."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.components.environments._verify import run_verifier

from components.environments import BrowserEnvironment, WebTaskError, start_web_task
from components.environments.miniwob import REPORT_PATH, page_seed, task_names
from components.environments.web_tasks import WebTask, WebTaskSpec, load_web_spec, start_app

MINIWOB_TASKS = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "miniwob"


def _utterance(task_dir: Path) -> str:
    return json.loads((task_dir / "goal.json").read_text())["state"]["result"]["utterance"]


def _quoted(utterance: str) -> str:
    return re.search(r'"([^"]+)"', utterance)[1]


def _wait_for(web: WebTask, ready, what: str) -> dict:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = web.state()
        if ready(state):
            return state
        time.sleep(0.05)
    raise AssertionError(f"the page never reported {what}: {web.state()}")


def _ended(web: WebTask) -> dict:
    return _wait_for(web, lambda s: s["result"]["ended"], "the episode's end")["result"]


def _started(web: WebTask) -> dict:
    return _wait_for(web, lambda s: s["episodes"], "an episode start")


def test_the_package_ships_the_task_pages() -> None:
    assert len(task_names()) >= 125 and {"click-button", "enter-text", "book-flight"} <= set(task_names())


def test_page_seed_is_browsergyms_draw_for_the_seed() -> None:
    # np.random.RandomState(seed).randint(0, 1000000): the value Math.seedrandom gets.
    assert [page_seed(seed) for seed in (0, 1, 2)] == [985772, 128037, 875688]


def test_unknown_miniwob_task_names_web_yaml(tmp_path: Path) -> None:
    (tmp_path / "web.yaml").write_text("app: miniwob\nseed: 0\ngoal: click-buton\n")
    with pytest.raises(WebTaskError, match=f"{tmp_path / 'web.yaml'}: .*'click-buton' is not a MiniWoB task"):
        load_web_spec(tmp_path)


def test_no_episode_fails_and_the_report_endpoint_refuses_garbage(tmp_path: Path) -> None:
    task_dir = MINIWOB_TASKS / "miniwob-click-button-0"
    with start_web_task(task_dir) as web:
        assert web.url == f"{web.app.url}/miniwob/click-button.html"
        assert web.render_prompt("The page {web_url} is open.") == f"The page {web.url} is open."
        assert web.state()["result"] == {"ended": False}
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == (False, 0.0)
        request = urllib.request.Request(web.app.url + REPORT_PATH, data=b'{"event": "end"}', method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 400


@pytest.mark.parametrize("right", [True, False], ids=["right-button", "wrong-button"])
def test_click_button_reward_reaches_the_verifier(browser: BrowserEnvironment, tmp_path: Path, right: bool) -> None:
    task_dir = MINIWOB_TASKS / "miniwob-click-button-1"
    target = _quoted(_utterance(task_dir))
    with start_web_task(task_dir) as web:
        browser.reset(web.url)
        buttons = browser.page.locator("#area button")
        texts = buttons.all_inner_texts()
        index = texts.index(target) if right else next(i for i, t in enumerate(texts) if t != target)
        buttons.nth(index).click()
        result = _ended(web)
        assert (result["success"], result["raw_reward"]) == ((True, 1.0) if right else (False, -1.0))
        assert result["utterance"] == _utterance(task_dir)
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == ((True, 1.0) if right else (False, 0.0))


@pytest.mark.parametrize("right", [True, False], ids=["right-text", "wrong-text"])
def test_enter_text_reward_reaches_the_verifier(browser: BrowserEnvironment, tmp_path: Path, right: bool) -> None:
    task_dir = MINIWOB_TASKS / "miniwob-enter-text-2"
    name = _quoted(_utterance(task_dir))
    with start_web_task(task_dir) as web:
        browser.reset(web.url)
        browser.page.locator("#tt").fill(name if right else name[:-1])
        browser.page.locator("#subbtn").click()
        assert _ended(web)["success"] is right
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == ((True, 1.0) if right else (False, 0.0))


def test_only_the_first_ended_episode_is_judged(browser: BrowserEnvironment, tmp_path: Path) -> None:
    task_dir = MINIWOB_TASKS / "miniwob-focus-text-0"
    with start_web_task(task_dir) as web:
        browser.reset(web.url)
        browser.page.evaluate("core.endEpisode(-1.0, false, 'gave up')")  # as the page's own timer would
        assert _ended(web)["reason"] == "gave up"
        browser.page.locator("#sync-task-cover").click()  # START: MiniWoB draws the next episode
        browser.page.locator("#tt").focus()
        state = _wait_for(web, lambda s: len(s["episodes"]) == 2 and s["episodes"][1]["ended"], "a second end")
        assert state["episodes"][1]["raw_reward"] == 1.0 and state["result"]["success"] is False
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == (False, 0.0)


def _episode(browser: BrowserEnvironment, task: str, seed: int) -> tuple[str, str]:
    with start_app(WebTaskSpec(app="miniwob", seed=seed, goal=task)) as web:
        browser.reset(web.url)
        utterance = _started(web)["episodes"][0]["utterance"]
        return utterance, browser.page.locator("#area").inner_html()


@pytest.mark.parametrize("task", ["click-button", "click-checkboxes"])
def test_the_seed_decides_the_episode(browser: BrowserEnvironment, task: str) -> None:
    first = _episode(browser, task, 1)
    assert _episode(browser, task, 1) == first  # same utterance, same page, to the last attribute
    assert _episode(browser, task, 2) != first
    assert first[0] == _utterance(MINIWOB_TASKS / f"miniwob-{task}-1")


def test_the_episode_timer_does_not_end_a_slow_agents_episode(browser: BrowserEnvironment, tmp_path: Path) -> None:
    task_dir = MINIWOB_TASKS / "miniwob-click-link-0"
    with start_web_task(task_dir) as web:
        browser.reset()
        page = browser.page
        # A fake clock, so a minute passes at once: MiniWoB's own timer ends an episode after 10 s.
        page.clock.install()
        page.goto(web.url)
        _started(web)
        page.clock.run_for(60_000)
        time.sleep(0.3)  # a report the timer had sent would have arrived by now
        assert web.state()["result"] == {"ended": False}
        page.locator("#area .alink", has_text=re.compile(rf"^{_quoted(_utterance(task_dir))}$")).first.click()
        assert _ended(web)["success"] is True
        assert run_verifier(task_dir, tmp_path, web.verifier_env()) == (True, 1.0)
