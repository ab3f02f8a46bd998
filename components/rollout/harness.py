"""Harness adapters: how to launch one agent harness for one rollout.

The rollout runner knows nothing about any particular harness. An adapter turns the
rollout's facts (proxy base URL, key, prompt, workspace) into a command line and the
environment variables that harness reads, and later fetches the final answer from
wherever that harness leaves it (a file, its JSON on stdout, ...). Claude Code, Codex,
OpenClaw and mini-swe-agent each become one more adapter (see docs in HARNESSES.md).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True)
class HarnessRun:
    """What one rollout asks of a harness."""

    rollout_id: str
    base_url: str  # <proxy>/s/<rollout_id>/v1: the rollout id in the path groups the calls
    api_key: str  # a placeholder: the proxy holds no real credentials and checks none
    model: str  # a name for the harness to send; the proxy substitutes the served model
    prompt: str
    workspace: Path  # the harness's working directory, a fresh copy of the task's files
    scratch_dir: Path  # private to the adapter (config files, answer file), outside the workspace
    max_turns: int
    max_tokens: int


@dataclass(frozen=True)
class HarnessCommand:
    """A command line and the environment variables it needs on top of the runner's base env."""

    argv: list[str]
    env: dict[str, str]


class HarnessAdapter(ABC):
    """Launches one kind of harness; one instance serves many rollouts."""

    name: ClassVar[str]

    @abstractmethod
    def command(self, run: HarnessRun) -> HarnessCommand:
        """The command that runs the harness headless on ``run.prompt`` in ``run.workspace``."""

    @abstractmethod
    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        """The harness's final answer once it exited (None when it left none)."""


class ReferenceHarness(HarnessAdapter):
    """The built-in tool-using agent (``reference_harness.py``), speaking OpenAI chat completions."""

    name = "reference"
    _SCRIPT = Path(__file__).with_name("reference_harness.py")

    def _answer_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / "answer.txt"

    def command(self, run: HarnessRun) -> HarnessCommand:
        # Run as a script, not `-m`: it imports nothing from OpenForge, like any real
        # harness, and works from a workspace cwd where the package is not importable.
        argv = [
            sys.executable,
            str(self._SCRIPT),
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


HARNESSES: dict[str, type[HarnessAdapter]] = {ReferenceHarness.name: ReferenceHarness}


def get_harness(name: str) -> HarnessAdapter:
    """The adapter for config ``harness.name``."""
    try:
        return HARNESSES[name]()
    except KeyError:
        known = ", ".join(sorted(HARNESSES))
        raise ValueError(f"harness.name {name!r} has no adapter; use one of: {known}") from None
