"""OpenClaw (``openclaw agent exec``), speaking OpenAI chat completions through a config file."""

from __future__ import annotations

import json
import math

from components.rollout.harnesses._install import NpmInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun, read_json_output
from components.rollout.harnesses.versions import OPENCLAW

_PROVIDER = "openforge"
# What the provider entry declares; the engine's real limit is enforced by the engine.
_CONTEXT_WINDOW = 65536


class OpenClaw(HarnessAdapter):
    name = "openclaw"
    installer = NpmInstaller((OPENCLAW,))

    def _config(self, run: HarnessRun) -> dict:
        model = {"id": run.model, "name": run.model, "contextWindow": _CONTEXT_WINDOW, "maxTokens": run.max_tokens}
        provider = {"baseUrl": run.base_url, "apiKey": run.api_key, "api": "openai-completions", "models": [model]}
        return {"models": {"providers": {_PROVIDER: provider}}}

    def command(self, run: HarnessRun) -> HarnessCommand:
        config = run.scratch_dir / "openclaw.json"  # JSON is JSON5
        config.write_text(json.dumps(self._config(run), indent=2))
        tmp = run.scratch_dir / "tmp"  # its per-run state (SQLite) goes under TMPDIR: keep it in the rollout
        tmp.mkdir(exist_ok=True)
        prompt = run.scratch_dir / "prompt.md"  # a file: a prompt starting with "-" is no option
        prompt.write_text(run.prompt)
        # Its own deadline a little inside the runner's, so it can still print its envelope.
        timeout = max(1, math.floor(run.time_limit_s) - 5)
        argv = [
            self.executable("openclaw"), "agent", "exec",
            "--config", str(config),
            "--model", f"{_PROVIDER}/{run.model}",
            "--cwd", str(run.workspace),
            "--timeout", str(timeout),
            "--json",
            "--message-file", str(prompt),
        ]  # fmt: skip
        return HarnessCommand(argv=argv, env={**self.path_env(), "TMPDIR": str(tmp)})

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        envelope = read_json_output(stdout)
        if not isinstance(envelope, dict) or not isinstance(envelope.get("final"), str):
            return None
        return envelope["final"]
