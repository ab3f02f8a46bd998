"""mini-swe-agent (``mini``), speaking chat completions through litellm, in a venv of its own."""

from __future__ import annotations

import json
import math
from typing import Any

from components.core.config import HarnessConfig
from components.rollout.harnesses._install import PipVenvInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun
from components.rollout.harnesses.versions import LITELLM, MINI_SWE_AGENT


class MiniSweAgent(HarnessAdapter):
    name = "mini-swe-agent"
    installer = PipVenvInstaller((MINI_SWE_AGENT, LITELLM))
    # harness.settings: the user's own keys of mini-swe-agent's config (validated in HarnessConfig).
    settings: dict[str, Any] = {}

    def configure(self, config: HarnessConfig) -> None:
        self.settings = dict(config.settings)

    def _trajectory(self, run: HarnessRun) -> str:
        return str(run.scratch_dir / "traj.json")

    def command(self, run: HarnessRun) -> HarnessCommand:
        settings = {
            "model.model_kwargs.api_base": run.base_url,
            "model.model_kwargs.max_tokens": run.max_tokens,
            "agent.step_limit": run.max_turns,
            "agent.cost_limit": 0,  # the served model has no price: 0 turns the limit off
            # Its own limit a little inside the runner's, so it still writes traj.json.
            "agent.wall_time_limit_seconds": max(1, math.floor(run.time_limit_s) - 5),
        }
        argv = [
            self.executable("mini"),
            "--model", f"openai/{run.model}",  # litellm's prefix for an OpenAI-compatible server
            f"--task={run.prompt}",  # one token: a prompt starting with "-" is no option
            "--yolo",
            "--exit-immediately",
            "--output", self._trajectory(run),
            "--config", "mini.yaml",  # the default config, which any -c replaces unless named
        ]  # fmt: skip
        # After the defaults, so a user's template replaces mini.yaml's.
        for key, value in {**self.settings, **settings}.items():
            argv += ["--config", f"{key}={json.dumps(value)}"]
        env = {
            **self.path_env(),
            # The key through the environment: litellm's openai/ route reads it there.
            "OPENAI_API_KEY": run.api_key,
            "MSWEA_CONFIGURED": "true",  # skip the first-run set-up wizard
            "MSWEA_COST_TRACKING": "ignore_errors",  # an unknown model has no price
            # Without it litellm fetches its price list from the internet at start-up and
            # retries with back-off for ~8 s when the egress sink refuses.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        return HarnessCommand(argv=argv, env=env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        try:
            with open(self._trajectory(run)) as file:
                info = json.load(file).get("info", {})
        except (OSError, ValueError):
            return None
        submission = info.get("submission") if isinstance(info, dict) else None
        return submission if isinstance(submission, str) else None
