"""Harness adapters: the reference harness, Claude Code, Codex CLI, OpenClaw, mini-swe-agent, browser-use, Stagehand, cua-agent.

``get_harness(name)`` gives the adapter the experiment config's ``harness.name`` selects;
versions are pinned in ``versions.py``; ``openforge harness install NAME`` installs one.
Exports load on first use (``components.core.lazy``): ``openforge harness`` lives in this
package and its ``--help`` should not load the experiment config's pydantic models.
"""

from components.core.lazy import lazy_exports

__all__ = [
    "HARNESSES",
    "HOME_ENV",
    "HarnessAdapter",
    "HarnessCommand",
    "HarnessInstallError",
    "HarnessNotInstalledError",
    "HarnessRun",
    "InstallResult",
    "get_harness",
    "harness_home",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "HARNESSES": "components.rollout.harnesses._registry:HARNESSES",
        "get_harness": "components.rollout.harnesses._registry:get_harness",
        "HarnessAdapter": "components.rollout.harnesses.base:HarnessAdapter",
        "HarnessCommand": "components.rollout.harnesses.base:HarnessCommand",
        "HarnessRun": "components.rollout.harnesses.base:HarnessRun",
        "HarnessInstallError": "components.rollout.harnesses._install:HarnessInstallError",
        "HarnessNotInstalledError": "components.rollout.harnesses._install:HarnessNotInstalledError",
        "InstallResult": "components.rollout.harnesses._install:InstallResult",
        "HOME_ENV": "components.rollout.harnesses._install:HOME_ENV",
        "harness_home": "components.rollout.harnesses._install:harness_home",
    },
)
