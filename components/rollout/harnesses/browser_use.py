"""browser-use, a browser agent speaking chat completions, in a venv of its own.

It runs as a small driver script (``_browser_use_driver.py``) under the venv's Python:
browser-use has no headless command line that attaches to a browser it did not launch.
The driver attaches to the runner's Chromium over CDP (``HarnessRun.browser_cdp_url``)
and sends every model call to the rollout's base URL; what each call carries is in
docs/harnesses.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from components.rollout.harnesses._install import PipVenvInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun, answer_in_json_file
from components.rollout.harnesses.versions import BROWSER_USE

DRIVER = Path(__file__).with_name("_browser_use_driver.py")


class BrowserUse(HarnessAdapter):
    name = "browser-use"
    installer = PipVenvInstaller((BROWSER_USE,))
    needs_browser = True

    def _result_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / "browser-use-result.json"

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
            "result_file": str(self._result_file(run)),
        }
        # A file, not argv: the key stays out of the process list.
        settings_file = run.scratch_dir / "browser-use-settings.json"
        settings_file.write_text(json.dumps(settings, indent=2) + "\n")
        env = {
            **self.path_env(),
            # shared/GUI.md: without these it reports telemetry and syncs runs to its cloud.
            "ANONYMIZED_TELEMETRY": "false",
            "BROWSER_USE_CLOUD_SYNC": "false",
            # Else every run asks the package registry for a newer release (refused by the sink).
            "BROWSER_USE_VERSION_CHECK": "false",
            # Its config and profile folders go under the throwaway HOME, never the machine's.
            "BROWSER_USE_CONFIG_DIR": str(run.home / ".config" / "browseruse"),
        }
        # -I: the driver's own folder must not shadow the browser_use package with this module.
        return HarnessCommand(argv=[self.executable("python"), "-I", str(DRIVER), str(settings_file)], env=env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return answer_in_json_file(self._result_file(run), "final_result")
