"""A reward stand-in for GUI iterations whose rollouts cannot reach a verdict that differs.

The task's own verifier still judges each rollout (its verdict and exit code pass through);
a wrapper adds noise below ``NOISE`` to the reward so the rollouts of a group differ and
the batch and the update run. The web iteration needs none: in choice mode the real
verdicts differ (tests/e2e/test_iteration_web.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

NOISE = 0.01

# Runs the task's verify.py and passes its verdict through, its reward plus noise in [0, NOISE).
_NOISY_VERIFY = f"""\
import json, os, random, subprocess, sys
real = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "verify.py")], capture_output=True, text=True)
lines = real.stdout.strip().splitlines()
if real.returncode not in (0, 1):  # it could not judge: that stays a verifier error
    print(real.stdout + real.stderr)
    sys.exit(real.returncode)
reward = json.loads(lines.pop())["reward"] if lines and lines[-1].startswith("{{") else float(real.returncode == 0)
print("\\n".join(lines))
print(json.dumps({{"reward": reward + random.random() * {NOISE}}}))
sys.exit(real.returncode)
"""


def noisy_task(tasks: Path, source: Path) -> None:
    """A copy of ``source`` under ``tasks`` whose reward is its verifier's plus the noise."""
    task = tasks / source.name
    shutil.copytree(source, task)
    (task / "noisy_verify.py").write_text(_NOISY_VERIFY)
    spec = yaml.safe_load((task / "task.yaml").read_text())
    spec["verifier"]["command"] = ["python3", "{task_dir}/noisy_verify.py"]
    (task / "task.yaml").write_text(yaml.safe_dump(spec))
