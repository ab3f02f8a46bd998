"""browser-use, a browser agent speaking chat completions, in a venv of its own.

It runs as a small driver script (``_browser_use_driver.py``) under the venv's Python:
browser-use has no headless command line that attaches to a browser it did not launch.
The driver attaches to the runner's Chromium over CDP (``HarnessRun.browser_cdp_url``)
and sends every model call to the rollout's base URL; what each call carries is in
docs/harnesses.md.
"""

from __future__ import annotations

from pathlib import Path

from components.rollout.harnesses._driver import DriverHarness
from components.rollout.harnesses._install import PipVenvInstaller
from components.rollout.harnesses.base import HarnessCommand, HarnessRun
from components.rollout.harnesses.versions import BROWSER_USE


class BrowserUse(DriverHarness):
    name = "browser-use"
    installer = PipVenvInstaller((BROWSER_USE,))
    needs_browser = True
    driver = Path(__file__).with_name("_browser_use_driver.py")
    answer_key = "final_result"  # the done action's text
    # Each call holds the task, the history as text and `<step_info>Step3 maximum:5`.
    choice_turn_pattern = r"<step_info>\s*Step\s*(\d+)"
    # Its element listing: `[14]<input name=name />`, `*[9]<select name=from ...` (* = new).
    choice_element_pattern = r"\[(\d+)\]"

    def command(self, run: HarnessRun) -> HarnessCommand:
        if run.browser_cdp_url is None:
            raise ValueError("browser-use needs the runner's browser: HarnessRun.browser_cdp_url is not set")
        settings = {
            "model": run.model,
            "base_url": run.base_url,
            "api_key": run.api_key,
            "max_tokens": run.max_tokens,
            "max_steps": run.max_turns,  # one step, one model call (the judge call is off)
            "prompt": run.prompt,
            "cdp_url": run.browser_cdp_url,
        }
        env = {
            # docs/harnesses.md ("browser-use"): without these it reports telemetry and syncs
            # runs to its cloud.
            "ANONYMIZED_TELEMETRY": "false",
            "BROWSER_USE_CLOUD_SYNC": "false",
            # Else every run asks the package registry for a newer release (refused by the sink).
            "BROWSER_USE_VERSION_CHECK": "false",
            # Its config and profile folders go under the throwaway HOME, never the machine's.
            "BROWSER_USE_CONFIG_DIR": str(run.home / ".config" / "browseruse"),
        }
        return self.driver_command(run, settings, env)
