"""cua-agent, a desktop agent, running its Qwen-VL loop over chat completions in a venv of its own.

It runs as a small driver script (``_cua_agent_driver.py``) under the venv's Python:
cua-agent is a library, with no headless command line that drives an X display it was
handed. The driver acts on the runner's display (``HarnessRun.display``) with xdotool
and sends every model call to the rollout's base URL; what each call carries, and how
the loop rewrites its own history, is in docs/harnesses.md.
"""

from __future__ import annotations

from pathlib import Path

from components.rollout.harnesses._driver import DriverHarness
from components.rollout.harnesses._install import PipVenvInstaller
from components.rollout.harnesses.base import HarnessCommand, HarnessRun
from components.rollout.harnesses.versions import CUA_AGENT, CUA_AGENT_EXTRAS, QWEN_AGENT

SCREENSHOT_DELAY_S = 0.5  # cua-agent's default wait after an action, before the next screenshot


class CuaAgent(DriverHarness):
    name = "cua-agent"
    installer = PipVenvInstaller((CUA_AGENT, QWEN_AGENT, *CUA_AGENT_EXTRAS))
    needs_desktop = True
    driver = Path(__file__).with_name("_cua_agent_driver.py")
    answer_key = "final_answer"

    def command(self, run: HarnessRun) -> HarnessCommand:
        if run.display is None:
            raise ValueError("cua-agent needs the runner's desktop: HarnessRun.display is not set")
        settings = {
            "model": run.model,
            "base_url": run.base_url,
            "api_key": run.api_key,
            "max_tokens": run.max_tokens,
            "max_retries": 2,  # its own retries of a failed call; the proxy marks each as a retry
            "screenshot_delay_s": SCREENSHOT_DELAY_S,
            "prompt": run.prompt,
        }
        env = {
            "DISPLAY": run.display,
            "XDG_SESSION_TYPE": "x11",
            # docs/harnesses.md ("cua-agent"): without these it reports telemetry (PostHog,
            # OpenTelemetry) and litellm fetches its price list from outside at start-up.
            "CUA_TELEMETRY": "off",
            "CUA_TELEMETRY_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        return self.driver_command(run, settings, env)
