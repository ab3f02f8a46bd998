"""cua-agent, a desktop agent, running its Qwen-VL loop over chat completions in a venv of its own.

It runs as a small driver script (``_cua_agent_driver.py``) under the venv's Python:
cua-agent is a library, with no headless command line that drives an X display it was
handed. The driver acts on the runner's display (``HarnessRun.display``) with xdotool
and sends every model call to the rollout's base URL; what each call carries, and how
the loop rewrites its own history, is in docs/harnesses.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from components.rollout.harnesses._install import PipVenvInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun
from components.rollout.harnesses.versions import CUA_AGENT, CUA_AGENT_EXTRAS, QWEN_AGENT

DRIVER = Path(__file__).with_name("_cua_agent_driver.py")
SCREENSHOT_DELAY_S = 0.5  # cua-agent's default wait after an action, before the next screenshot


class CuaAgent(HarnessAdapter):
    name = "cua-agent"
    installer = PipVenvInstaller((CUA_AGENT, QWEN_AGENT, *CUA_AGENT_EXTRAS))
    needs_desktop = True

    def _result_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / "cua-agent-result.json"

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
            "result_file": str(self._result_file(run)),
        }
        # A file, not argv: the key stays out of the process list.
        settings_file = run.scratch_dir / "cua-agent-settings.json"
        settings_file.write_text(json.dumps(settings, indent=2) + "\n")
        env = {
            **self.path_env(),
            "DISPLAY": run.display,
            "XDG_SESSION_TYPE": "x11",
            # shared/GUI.md: without these it reports telemetry (PostHog, OpenTelemetry) and
            # litellm fetches its price list from outside at start-up.
            "CUA_TELEMETRY": "off",
            "CUA_TELEMETRY_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        # -I: the driver's own folder must not shadow the cua_agent package with this module.
        return HarnessCommand(argv=[self.executable("python"), "-I", str(DRIVER), str(settings_file)], env=env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        try:
            result = json.loads(self._result_file(run).read_text())
        except (OSError, ValueError):
            return None
        answer = result.get("final_answer") if isinstance(result, dict) else None
        return answer if isinstance(answer, str) else None
