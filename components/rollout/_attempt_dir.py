"""Where one attempt of a rollout keeps its workspace and the harness's scratch folders.

Harnesses write their working directory into the model's prompt: Claude Code names its
cwd and a memory folder derived from it in the system prompt. A folder named after the
rollout (``/tmp/openforge-<rollout id>-<random>``) therefore made the prompts of a task's
GRPO siblings differ about 1,500 tokens into a 22,000-token first call, so the engine's
prefix cache could reuse none of a sibling's call and prefilled each one from scratch;
the policy was also trained on prompts carrying a random path no deployment shows.

So an attempt uses one fixed folder wherever the container's /tmp is its own (the
sandbox runtime and a cluster pod: every rollout then sees the same path, as a deployed
agent would see its project's), and falls back to a folder of its own only where /tmp
is shared and another rollout holds the fixed one (the plain ``process`` runtime).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FIXED_NAME = "openforge-rollout"


@contextmanager
def attempt_dir(rollout_id: str) -> Iterator[Path]:
    """An empty folder for one attempt, removed afterwards (files an agent made undeletable
    are left: they must not sink the outcome)."""
    fixed = Path(tempfile.gettempdir()) / FIXED_NAME
    try:
        fixed.mkdir(mode=0o700)
    except FileExistsError:  # a shared /tmp, and another rollout (or a killed one) holds it
        with tempfile.TemporaryDirectory(prefix=f"openforge-{rollout_id}-", ignore_cleanup_errors=True) as own:
            yield Path(own)
        return
    try:
        yield fixed
    finally:
        shutil.rmtree(fixed, ignore_errors=True)
