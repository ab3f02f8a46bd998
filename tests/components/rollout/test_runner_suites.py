"""The benchmark suites' shipped examples through the rollout runner, one task of each format:
the task folder as `openforge tasks` writes it, its environment (the static site in Chromium, the
OSWorld set-up on an X display), a scripted harness doing what a competent agent would, and the
task's own verifier; a right and a wrong result each.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from tests.components.environments.suites._examples import write_example

from components.core.outcome import RolloutStatus
from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun

REPO = Path(__file__).resolve().parents[3]


class SiteHarness(HarnessAdapter):
    """Follows ``links`` in the runner's browser and answers with the last page's text (_site_harness.py)."""

    name = "scripted-site"

    def __init__(self, *links: str) -> None:
        self.links = links

    def command(self, run: HarnessRun) -> HarnessCommand:
        assert run.browser_cdp_url is not None
        env = {"FAKE_PROMPT": run.prompt, "FAKE_CDP_URL": run.browser_cdp_url, "PYTHONPATH": str(REPO)}
        return HarnessCommand([sys.executable, str(Path(__file__).with_name("_site_harness.py")), *self.links], env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return stdout.strip() or None


class TerminalHarness(HarnessAdapter):
    """Types ``line`` into the task's terminal with xdotool, then waits until draft.txt changes."""

    name = "scripted-terminal"

    def __init__(self, line: str) -> None:
        self.line = line

    def command(self, run: HarnessRun) -> HarnessCommand:
        assert run.display is not None
        script = (
            "before=$(cat draft.txt); "
            f"xdotool mousemove --sync 340 250 click 1 type {shlex.quote(self.line + chr(10))}; "
            'for i in $(seq 100); do [ "$(cat draft.txt)" != "$before" ] && break; sleep 0.1; done; cat draft.txt'
        )
        return HarnessCommand(["sh", "-c", script], {})

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return stdout.strip() or None


@pytest.fixture(scope="module")
def suite_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suites")
    for suite in ("webvoyager", "mind2web", "osworld"):
        write_example(suite, out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "links", "passed", "said"),
    [
        ("webvoyager-recipes-0", ["Vegetarian Four Cheese Lasagna"], True, ""),
        (
            "webvoyager-recipes-0",
            ["Spinach Lasagna"],
            False,
            "answer: does not contain 'Vegetarian Four Cheese Lasagna'\nanswer: contains 'Spinach Lasagna'",
        ),
        ("mind2web-5c7d0e7a9f1b4b3c8e2a6d4f1b9c0a7e", ["Central Library"], True, ""),
        ("mind2web-5c7d0e7a9f1b4b3c8e2a6d4f1b9c0a7e", ["Riverside Branch"], False, "answer: does not contain '16:00'"),
    ],
)
def test_a_web_benchmark_task_runs_on_its_local_site(
    chromium_ready: None, gui_rollout, suite_tasks: Path, task: str, links: list[str], passed: bool, said: str
) -> None:
    outcome, _ = gui_rollout(SiteHarness(*links), suite_tasks / task)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (passed, float(passed)), outcome.verifier_output
    assert said in outcome.verifier_output
    assert f"\n{links[0]}\n" in f"\n{outcome.final_answer}\n"  # the page the harness reached, served offline


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "passed", "said"),
    [
        ("echo hello world > draft.txt", True, "compare_text_file on {'file': 'draft.txt'}: 1"),
        (
            "echo hello wrld > draft.txt",
            False,
            # compared as ignore_blanks leaves them
            "compare_text_file on {'file': 'draft.txt'}: 0 (found 'hello wrld', expected 'hello world')",
        ),
    ],
)
def test_an_osworld_task_runs_on_a_local_desktop(
    desktop_ready: None, gui_rollout, suite_tasks: Path, line: str, passed: bool, said: str
) -> None:
    outcome, _ = gui_rollout(TerminalHarness(line), suite_tasks / "osworld-0f6c3b1e-7d2a-4e5b-9c8d-1a2b3c4d5e6f")

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (passed, float(passed)), outcome.verifier_output
    assert said in outcome.verifier_output
    assert outcome.final_answer == line.split(" > ")[0].removeprefix("echo ")  # draft.txt, as the terminal left it
