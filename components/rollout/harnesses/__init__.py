"""Harness adapters: the reference harness, Claude Code, Codex CLI, OpenClaw, mini-swe-agent, browser-use, Stagehand, cua-agent.

``get_harness(name)`` gives the adapter the experiment config's ``harness.name`` selects;
versions are pinned in ``versions.py``; ``openforge harness install NAME`` installs one.
"""

from pathlib import Path

from components.core.config import HarnessConfig
from components.rollout.harnesses._install import (
    HarnessInstallError,
    HarnessNotInstalledError,
    InstallResult,
    harness_home,
)
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun
from components.rollout.harnesses.browser_use import BrowserUse
from components.rollout.harnesses.claude_code import ClaudeCode
from components.rollout.harnesses.codex import Codex
from components.rollout.harnesses.cua_agent import CuaAgent
from components.rollout.harnesses.mini_swe_agent import MiniSweAgent
from components.rollout.harnesses.openclaw import OpenClaw
from components.rollout.harnesses.reference import ReferenceHarness
from components.rollout.harnesses.stagehand import Stagehand

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


__all__ = [
    "HARNESSES",
    "HarnessAdapter",
    "HarnessCommand",
    "HarnessInstallError",
    "HarnessNotInstalledError",
    "HarnessRun",
    "InstallResult",
    "get_harness",
    "harness_home",
]
