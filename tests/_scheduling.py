"""How `make test` spreads the suite over its xdist workers (`--dist loadfile`, Makefile).

Each file goes to one worker whole, so module fixtures are made once, as xdist's loadfile
does. On top of that, the files that use one of ``SHARED_SESSION_FIXTURES`` (a minute or
more to make: a real quickstart run, a vLLM start) go to one worker together, as one unit,
which makes the fixture once instead of once on each worker that drew one of them. Slow
files come first (``slow_files_first``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

# Session fixtures worth a worker of their own users: each costs ~50-65 s of a CI worker to make.
SHARED_SESSION_FIXTURES = ("quickstart_store", "vllm_engine")


def slow_files_first(items: list[pytest.Item]) -> None:
    """Files holding a ``slow`` test first, longest first, so xdist starts them while the many
    quick files still wait to fill the gaps (in collection order, a 30-minute file that came
    late ran alone at the end). A file's length is guessed from its tests' own ``timeout``
    marks, summed. Files that need vLLM or podman, which `make test` installs in the
    background (Makefile: vllm-background, system-background), come after the other slow
    ones, so no worker starts the session waiting for an install. Files stay whole: the key
    is the file's and the sort is stable."""
    budget: dict[Path, float] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            budget.setdefault(item.path, 0.0)
    for item in items:
        if item.path in budget:
            mark = item.get_closest_marker("timeout")
            budget[item.path] += float(mark.args[0]) if mark and mark.args else 300.0

    def rank(item: pytest.Item) -> tuple[int, float]:
        if item.path not in budget:
            return 2, 0.0
        waits = any(word in item.path.name for word in ("vllm", "podman"))
        return int(waits), -budget[item.path]

    items.sort(key=rank)


class FilesAndGroups(LoadFileScheduling):
    """xdist's loadfile scheduling, except that the files mentioning one of
    ``SHARED_SESSION_FIXTURES`` are one unit of work, named after it.

    The controller sees node ids only, so a file's group comes from its text: a test that
    takes the fixture names it as a parameter (as does a module fixture built on it). xdist's
    own ``xdist_group`` marks cannot carry this: xdist 3.8 writes the group into
    ``item._nodeid``, which pytest 9.2's node ids no longer read."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._root = Path(str(config.rootpath))
        self._groups: dict[str, str] = {}

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path not in self._groups:
            self._groups[path] = _shared_fixture(self._root / path) or path
        return self._groups[path]


def _shared_fixture(path: Path) -> str | None:
    try:
        text = path.read_text()
    except OSError:  # not a file of ours (a doctest id, a plugin's item): a unit of its own
        return None
    return next((name for name in SHARED_SESSION_FIXTURES if re.search(rf"\b{name}\b", text)), None)


def files_and_groups_scheduler(config: pytest.Config, log: Any) -> FilesAndGroups | None:
    """``FilesAndGroups`` under ``--dist loadfile``; None (xdist's own choice) for any other."""
    return FilesAndGroups(config, log) if config.getvalue("dist") == "loadfile" else None
