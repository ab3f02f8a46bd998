"""The harness runs confined (components/rollout/_confine.py): a harness that tries to read
and rewrite its grader, rewrite the records of its calls, or leave a process behind to
change the workspace under the verifier gets none of it, and the rollout is graded."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests._missing import needs
from tests.components.rollout.test_runner import PythonHarness, _rollout

from components.core.outcome import RolloutStatus
from components.rollout._confine import confinement_problem

pytestmark = needs(confinement_problem() and f"cannot confine here: {confinement_problem()}")

# The verifier waits long enough for a left-behind process to strike, then checks the result.
VERIFY = """
import pathlib, sys, time
time.sleep(1.5)
sys.exit(0 if pathlib.Path("result.txt").read_text() == "honest" else 1)
"""


def test_a_hostile_harness_cannot_touch_its_grader_its_records_or_the_verifiers_run(
    proxy, rollout_config, make_task, tmp_path: Path
) -> None:
    task = make_task("grader", verify=textwrap.dedent(VERIFY))
    verify = task / "verify.py"
    original = verify.read_bytes()
    records = tmp_path / "trajectories"  # the proxy fixture's folder
    (records / "grader-s0.jsonl").write_text('{"recorded": true}\n')
    hostile = PythonHarness(f"""
        import json, os, subprocess
        seen = {{}}
        for name, action in (
            ("read the verifier", lambda: open({str(verify)!r}).read()),
            ("rewrite the verifier", lambda: open({str(verify)!r}, "w").write("import sys; sys.exit(0)")),
            ("rewrite the records", lambda: open({str(records / "grader-s0.jsonl")!r}, "w").write("{{}}")),
        ):
            try:
                seen[name] = "done: " + repr(action())[:40]
            except OSError as exc:
                seen[name] = "blocked: " + type(exc).__name__
        open("seen.json", "w").write(json.dumps(seen))
        open("result.txt", "w").write("honest")
        # Strikes after the harness has ended, while the verifier reads the result.
        subprocess.Popen(["setsid", "sh", "-c", "sleep 0.7; echo -n hacked > result.txt"])
        open(os.environ["ANSWER_FILE"], "w").write("done")
    """)

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=hostile)

    assert (outcome.status, outcome.passed) == (RolloutStatus.OK, True), (outcome.details, outcome.verifier_output)
    assert outcome.extra["harness_confined"] is True
    assert verify.read_bytes() == original
    assert (records / "grader-s0.jsonl").read_text() == '{"recorded": true}\n'


# The verifier runs what the agent wrote, as graders of code do.
RUNS_THE_AGENTS_CODE = """
import runpy, sys
runpy.run_path("solution.py")
sys.exit(0)
"""


def test_the_agents_code_run_by_the_verifier_cannot_rewrite_the_records_of_its_calls(
    proxy, rollout_config, make_task, tmp_path: Path
) -> None:
    task = make_task("graded-code", verify=textwrap.dedent(RUNS_THE_AGENTS_CODE))
    records = tmp_path / "trajectories"
    (records / "graded-code-s0.jsonl").write_text('{"recorded": true}\n')
    target = records / "graded-code-s0.jsonl"
    hostile = PythonHarness(f"""
        import os
        open("solution.py", "w").write(
            "import pathlib\\n"
            "try:\\n"
            "    pathlib.Path({str(target)!r}).write_text('{{}}')\\n"
            "    pathlib.Path('struck.txt').write_text('rewrote the records')\\n"
            "except OSError as exc:\\n"
            "    pathlib.Path('struck.txt').write_text('blocked: ' + type(exc).__name__)\\n"
        )
        open(os.environ["ANSWER_FILE"], "w").write("done")
    """)

    outcome = _rollout(rollout_config(), task, proxy.url, tmp_path, adapter=hostile)

    assert (outcome.status, outcome.passed) == (RolloutStatus.OK, True), (outcome.details, outcome.verifier_output)
    assert outcome.extra["verifier_confined"] is True
    assert target.read_text() == '{"recorded": true}\n'
