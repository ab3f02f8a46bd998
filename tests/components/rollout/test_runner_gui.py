"""Web tasks through the rollout runner: the app and the browser start, the verdict
follows what was done in the browser, and a harness that never stops is stopped.

The harness is a scripted one (``_browser_harness.py``) that drives the runner's
Chromium over CDP and makes one model call per step to the fake proxy, which records
each call the way the real one does.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from components.core.outcome import RolloutStatus
from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun

REPO = Path(__file__).resolve().parents[3]
TASK = REPO / "examples" / "tasks" / "web" / "web-form-submit-1"
ROLLOUT_ID = "web-form-submit-1-s0"
SUBMISSION = json.loads((TASK / "goal.json").read_text())["state"]["submissions"][0]


class ScriptedBrowserHarness(HarnessAdapter):
    name = "scripted-browser"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def command(self, run: HarnessRun) -> HarnessCommand:
        assert run.browser_cdp_url is not None
        env = {
            "FAKE_BASE_URL": run.base_url,
            "FAKE_API_KEY": run.api_key,
            "FAKE_MODEL": run.model,
            "FAKE_PROMPT": run.prompt,
            "FAKE_CDP_URL": run.browser_cdp_url,
            "FAKE_SUBMISSION": json.dumps(SUBMISSION),
            "PYTHONPATH": str(REPO),
        }
        return HarnessCommand([sys.executable, str(Path(__file__).with_name("_browser_harness.py")), self.mode], env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return stdout.strip() or None


@pytest.mark.slow
def test_web_task_passes_when_the_form_is_submitted_right(chromium_ready, gui_rollout) -> None:
    outcome, fake = gui_rollout(ScriptedBrowserHarness("right"), TASK)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.num_calls == 2 and fake.sessions == [ROLLOUT_ID] * 2
    _, cdp_url, app_url = outcome.final_answer.split()
    for url in (cdp_url, app_url):  # torn down: neither the browser nor the app answers
        with pytest.raises(OSError):
            urllib.request.urlopen(url, timeout=2)


@pytest.mark.slow
def test_web_task_fails_when_the_wrong_choice_is_submitted(chromium_ready, gui_rollout) -> None:
    outcome, _ = gui_rollout(ScriptedBrowserHarness("wrong"), TASK)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (False, 0.0)
    assert "state.submissions[0].size: expected 'M', found 'XL'" in outcome.verifier_output


@pytest.mark.slow
def test_a_runaway_harness_is_stopped_at_the_step_limit(chromium_ready, gui_rollout) -> None:
    outcome, _ = gui_rollout(ScriptedBrowserHarness("runaway"), TASK, max_turns=3)

    assert outcome.status is RolloutStatus.STEP_LIMIT, outcome.details
    assert "more than harness.max_turns=3" in outcome.details and outcome.extra["step_limit"] == 3
    # Stopped at the first call past the limit; one more may land within a polling interval.
    assert outcome.num_calls in (4, 5), outcome.num_calls
    assert outcome.reward is None and outcome.duration_s < 30
