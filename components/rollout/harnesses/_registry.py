"""Which adapter runs a harness: the experiment config's ``harness.name`` -> its class."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from components.rollout.harnesses.base import HarnessAdapter
from components.rollout.harnesses.browser_use import BrowserUse
from components.rollout.harnesses.claude_code import ClaudeCode
from components.rollout.harnesses.codex import Codex
from components.rollout.harnesses.cua_agent import CuaAgent
from components.rollout.harnesses.mini_swe_agent import MiniSweAgent
from components.rollout.harnesses.openclaw import OpenClaw
from components.rollout.harnesses.reference import ReferenceHarness
from components.rollout.harnesses.stagehand import Stagehand

if TYPE_CHECKING:
    from components.core.config import HarnessConfig

HARNESSES: dict[str, type[HarnessAdapter]] = {
    cls.name: cls for cls in (ReferenceHarness, ClaudeCode, Codex, OpenClaw, MiniSweAgent, BrowserUse, Stagehand, CuaAgent)
}


def get_harness(name: str, home: Path | None = None, config: HarnessConfig | None = None) -> HarnessAdapter:
    """The adapter for config ``harness.name``; ``home`` overrides where harnesses are installed,
    ``config`` (the experiment's ``harness`` section) carries per-harness settings such as ``mode``."""
    try:
        adapter = HARNESSES[name]()
    except KeyError:
        known = ", ".join(HARNESSES)
        raise ValueError(f"harness {name!r} has no adapter; use one of: {known}") from None
    if home is not None:
        adapter.home = home
    if config is not None:
        adapter.configure(config)
    return adapter
