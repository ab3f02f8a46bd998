"""Run a web task's verify.py the way the rollout runner does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from components.rollout.runner import verdict


def run_verifier(task_dir: Path, tmp_path: Path, env: dict[str, str], answer: str = "") -> tuple[bool, float]:
    """Run the task's verify.py as the runner does; its verdict, or ValueError for a broken verifier."""
    answer_file = tmp_path / "final_answer.txt"
    answer_file.write_text(answer)
    result = subprocess.run(
        ["python3", str(task_dir / "verify.py")],
        cwd=tmp_path,
        env={**os.environ, **env, "OPENFORGE_FINAL_ANSWER": str(answer_file), "OPENFORGE_TASK_DIR": str(task_dir)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return verdict(result.returncode, result.stdout, result.stderr)
