"""The runner under the straggler cut: it asks its proxy, stops the harness, records status cut."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.components.rollout.test_runner import ANSWER_DONE, PythonHarness, _rollout

from components.core.outcome import RolloutStatus

CUT = {"rollout": {"finish_fraction": 0.5, "time_limit_s": 60}}
# Writes its answer only after a minute: a straggler.
SLOW = PythonHarness("import os, time; time.sleep(60); open(os.environ['ANSWER_FILE'], 'w').write('done')")


def test_a_cut_during_the_harness_stops_it_and_masks_the_rollout(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    task = make_task("slow")
    threading.Timer(1.0, lambda: setattr(proxy, "cut_reason", "3 of 4 rollouts ended")).start()

    started = time.monotonic()
    outcome = _rollout(rollout_config(**CUT), task, proxy.url, tmp_path, adapter=SLOW)

    assert outcome.status is RolloutStatus.CUT
    assert outcome.details.startswith("3 of 4 rollouts ended; the harness was stopped")
    assert outcome.reward is None and outcome.passed is None, "a cut rollout is never graded"
    assert time.monotonic() - started < 30, "stopped at a poll, not run to its end"
    assert proxy.flushes == ["slow-s0"], "what it recorded before the cut is flushed and kept"


def test_a_rollout_that_starts_after_the_cut_never_runs_its_harness(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    proxy.cut_reason = "the cut"
    outcome = _rollout(rollout_config(**CUT), make_task("late"), proxy.url, tmp_path, adapter=ANSWER_DONE)
    assert outcome.status is RolloutStatus.CUT
    assert outcome.details.startswith("the cut; the harness never started")
    assert outcome.final_answer is None and outcome.harness_exit_code is None


def test_without_a_cut_configured_the_runner_never_asks(proxy, rollout_config, make_task, tmp_path: Path) -> None:
    proxy.cut_reason = "a cut the runner must not see"
    outcome = _rollout(rollout_config(), make_task("plain"), proxy.url, tmp_path, adapter=ANSWER_DONE)
    assert outcome.status is RolloutStatus.OK and proxy.cut_asks == 0
