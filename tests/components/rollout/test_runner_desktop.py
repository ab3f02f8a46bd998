"""Desktop tasks through the rollout runner: a fresh display with the task's terminal, the
harness and the verifier on it, the verdict following what was typed, a runaway stopped at
the step limit, and nothing left of the display afterwards.

The harness is a scripted one (a few lines of shell here) that types into the task's
xterm with xdotool and makes one model call per step to the fake proxy, which records
each call the way the real one does. cua-agent itself runs in tests/e2e/test_cua_agent.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.outcome import RolloutStatus
from components.rollout.harnesses import HarnessAdapter, HarnessCommand, HarnessRun

REPO = Path(__file__).resolve().parents[3]
TASK = REPO / "examples" / "tasks" / "desktop" / "desktop-terminal-file"
ROLLOUT_ID = "desktop-terminal-file-s0"

# One model call per step, as a desktop agent makes them; then what the mode does.
_CALL = (
    "import json, os, urllib.request\n"
    "body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'step'}]}).encode()\n"
    "request = urllib.request.Request(os.environ['FAKE_BASE_URL'] + '/chat/completions', data=body,\n"
    "    headers={'Content-Type': 'application/json'})\n"
    "urllib.request.urlopen(request, timeout=10).read()\n"
)
_SCRIPTS = {
    # Types into the task's terminal, waits for the shell to write the file, says what it saw.
    "right": "xdotool mousemove --sync 340 250 click 1 type 'echo hello desktop > hello.txt\n'",
    "wrong": "xdotool mousemove --sync 340 250 click 1 type 'echo hello world > hello.txt\n'",
    "runaway": "while true; do python3 -c \"$CALL\"; sleep 0.1; done",
}


class ScriptedDesktopHarness(HarnessAdapter):
    name = "scripted-desktop"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def command(self, run: HarnessRun) -> HarnessCommand:
        assert run.display is not None
        script = (
            f'python3 -c "$CALL"; {_SCRIPTS[self.mode]}; '
            "for i in $(seq 100); do [ -s hello.txt ] && break; sleep 0.1; done; "
            'echo "$DISPLAY $XDG_SESSION_TYPE $(xdotool search --onlyvisible --name . getwindowname %@ | sort | head -1)"'
            "; env | grep -c ^OPENFORGE_ || true"
        )
        env = {"FAKE_BASE_URL": run.base_url, "CALL": _CALL}
        return HarnessCommand(["sh", "-c", script], env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return stdout.strip() or None


@pytest.mark.slow
def test_desktop_task_passes_when_the_terminal_writes_the_file(desktop_ready, gui_rollout) -> None:
    outcome, fake = gui_rollout(ScriptedDesktopHarness("right"), TASK)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (True, 1.0), outcome.verifier_output
    assert outcome.num_calls == 1 and fake.sessions == [ROLLOUT_ID]
    seen, openforge_vars = outcome.final_answer.splitlines()
    display, session_type, window = seen.split(" ", 2)
    assert (session_type, window) == ("x11", "OpenForge Terminal")
    assert openforge_vars == "0"  # the harness holds none of the runner's variables
    # Torn down: the display's socket is gone.
    assert not Path(f"/tmp/.X11-unix/X{display.lstrip(':')}").exists()


@pytest.mark.slow
def test_desktop_task_fails_when_the_file_is_wrong(desktop_ready, gui_rollout) -> None:
    outcome, _ = gui_rollout(ScriptedDesktopHarness("wrong"), TASK)

    assert outcome.status is RolloutStatus.OK, outcome.details
    assert (outcome.passed, outcome.reward) == (False, 0.0)
    assert "file hello.txt: expected 'hello desktop', found 'hello world'" in outcome.verifier_output


@pytest.mark.slow
def test_a_runaway_desktop_harness_is_stopped_at_the_step_limit(desktop_ready, gui_rollout) -> None:
    outcome, _ = gui_rollout(ScriptedDesktopHarness("runaway"), TASK, max_turns=3)

    assert outcome.status is RolloutStatus.STEP_LIMIT, outcome.details
    assert "more than harness.max_turns=3" in outcome.details and outcome.extra["step_limit"] == 3
    assert outcome.num_calls in (4, 5), outcome.num_calls
    assert outcome.reward is None and outcome.duration_s < 40



def test_desktop_whose_app_never_shows_is_an_infra_error(desktop_ready, gui_rollout, make_task) -> None:
    task_dir = make_task("desktop-broken")
    (task_dir / "desktop.yaml").write_text('apps:\n  - argv: ["false"]\n    window: Never\n')

    outcome, fake = gui_rollout(ScriptedDesktopHarness("right"), task_dir)

    assert outcome.status is RolloutStatus.INFRA_ERROR, outcome.details
    assert "GUI environment did not start" in outcome.details and "desktop.yaml" in outcome.details
    assert fake.sessions == []  # the harness never started
