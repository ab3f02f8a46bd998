"""The built-in harness (``components/rollout/reference_harness.py``): nothing to install."""

from __future__ import annotations

import sys
from pathlib import Path

from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun

_SCRIPT = Path(__file__).resolve().parents[1] / "reference_harness.py"


class ReferenceHarness(HarnessAdapter):
    """The built-in tool-using agent, speaking OpenAI chat completions with one ``shell`` tool."""

    name = "reference"

    def _answer_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / "answer.txt"

    def command(self, run: HarnessRun) -> HarnessCommand:
        # Run as a script, not `-m`: it imports nothing from OpenForge, like any real
        # harness, and works from a workspace cwd where the package is not importable.
        argv = [
            sys.executable,
            str(_SCRIPT),
            "--base-url", run.base_url,
            "--model", run.model,
            "--prompt", run.prompt,
            "--workspace", str(run.workspace),
            "--max-turns", str(run.max_turns),
            "--max-tokens", str(run.max_tokens),
            "--answer-file", str(self._answer_file(run)),
        ]  # fmt: skip
        # The key travels in the environment, never on a command line other users can read.
        return HarnessCommand(argv=argv, env={"OPENAI_API_KEY": run.api_key})

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        try:
            return self._answer_file(run).read_text(errors="replace")
        except FileNotFoundError:
            return None
