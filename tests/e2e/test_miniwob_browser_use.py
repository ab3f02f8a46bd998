"""browser-use solves a MiniWoB++ episode (examples/tasks/miniwob/miniwob-click-button-1)
through the rollout runner and the real recording proxy: the page's own reward reaches the
verifier, every call is recorded with its screenshot, and nothing leaves 127.0.0.1.
The scripted model reads the utterance from the prompt and clicks the button it names,
by the index browser-use gives that button on this run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.e2e._browser_use import agent_reply, browser_use, check_browser_use_calls, done, element_index
from tests.e2e._scripted_model import REPO, run_web_rollout, scripted_model

from components.core.outcome import RolloutStatus

TASK = REPO / "examples" / "tasks" / "miniwob" / "miniwob-click-button-1"
UTTERANCE = json.loads((TASK / "goal.json").read_text())["state"]["result"]["utterance"]


def _actions(step: int, page: str) -> list[dict[str, Any]]:
    if step == 0:
        if UTTERANCE not in page:  # the runner put the page's utterance into the prompt
            raise LookupError(f"the task {UTTERANCE!r} is not in the request")
        label = re.search(r'"([^"]+)"', UTTERANCE)[1]
        return [{"click": {"index": element_index(page, rf"<button />\s*{re.escape(label)}\n")}}]
    return [done("Clicked it.")]


@pytest.mark.slow
def test_browser_use_solves_a_miniwob_episode_through_proxy(chromium_ready: None, tmp_path: Path) -> None:
    adapter, config = browser_use(max_turns=4)
    with scripted_model(agent_reply(_actions)) as model:
        rollout = run_web_rollout(config, adapter, model, TASK, tmp_path)

    outcome = rollout.outcome
    assert not model.problems, model.problems
    assert outcome.status is RolloutStatus.OK, f"{outcome.details}\n--- proxy ---\n{rollout.proxy_log}"
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert len(rollout.calls) == outcome.num_calls == model.steps == 2, [c.response for c in rollout.calls]
    check_browser_use_calls(rollout)
