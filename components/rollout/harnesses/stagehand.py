"""Stagehand, a browser agent whose computer-use modes speak three model APIs, on the pinned Node.

It runs as a small Node driver (``_stagehand_driver.mjs``): Stagehand is a library, with no
command line that runs its agent. The driver attaches Stagehand to the runner's Chromium
over CDP (``HarnessRun.browser_cdp_url``; ``localBrowserLaunchOptions.cdpUrl``) and runs
its computer-use agent in the experiment's ``harness.mode``:

- ``responses``: OpenAI Responses, a ``computer_use_preview`` tool, ``previous_response_id``;
- ``messages``: Anthropic Messages, the ``computer_20250124`` tool, screenshots in ``tool_result``;
- ``chat``: chat completions with Qwen-style ``<tool_call>`` text (the Fara-7B client).

What each mode sends and what the proxy maps is in docs/harnesses.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from components.core.config import HarnessConfig, StagehandMode
from components.rollout.harnesses._install import NpmInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun, answer_in_json_file
from components.rollout.harnesses.versions import STAGEHAND

DRIVER = Path(__file__).with_name("_stagehand_driver.mjs")
DEFAULT_MODE: StagehandMode = "responses"
_ENTRY = ("node_modules", "@browserbasehq", "stagehand", "dist", "esm", "index.js")


class Stagehand(HarnessAdapter):
    name = "stagehand"
    installer = NpmInstaller((STAGEHAND,))
    needs_browser = True

    def __init__(self, mode: StagehandMode = DEFAULT_MODE) -> None:
        if mode not in get_args(StagehandMode):
            raise ValueError(f"Stagehand mode {mode!r} is not one of: {', '.join(get_args(StagehandMode))}")
        self.mode = mode

    def configure(self, config: HarnessConfig) -> None:
        self.mode = config.mode or DEFAULT_MODE

    def _result_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / "stagehand-result.json"

    def command(self, run: HarnessRun) -> HarnessCommand:
        if run.browser_cdp_url is None:
            raise ValueError("Stagehand needs the runner's browser: HarnessRun.browser_cdp_url is not set")
        # The Anthropic SDK appends /v1/messages itself; the OpenAI SDK appends to .../v1.
        base_url = run.base_url.removesuffix("/v1") if self.mode == "messages" else run.base_url
        settings = {
            "mode": self.mode,
            "model": run.model,
            "base_url": base_url,
            "api_key": run.api_key,
            "max_steps": run.max_turns,  # one step, one model call
            "prompt": run.prompt,
            "cdp_url": run.browser_cdp_url,
            "result_file": str(self._result_file(run)),
            "stagehand_entry": str(self.folder.joinpath(*_ENTRY)),
        }
        # A file, not argv: the key stays out of the process list.
        settings_file = run.scratch_dir / "stagehand-settings.json"
        settings_file.write_text(json.dumps(settings, indent=2) + "\n")
        return HarnessCommand(argv=[self.executable("node"), str(DRIVER), str(settings_file)], env=self.path_env())

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return answer_in_json_file(self._result_file(run), "message")
