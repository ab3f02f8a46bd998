"""Claude Code (``claude -p``), speaking the Anthropic Messages API to the proxy."""

from __future__ import annotations

import uuid

from components.rollout.harnesses._install import NpmInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun, read_json_output
from components.rollout.harnesses.versions import CLAUDE_CODE

# What a headless rollout may use without a permission prompt (there is nobody to ask).
_ALLOWED_TOOLS = "Bash,Read,Write,Edit,Glob,Grep"
# Background traffic it would send to its vendor: telemetry, updates, error reports.
_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeCode(HarnessAdapter):
    name = "claude-code"
    installer = NpmInstaller((CLAUDE_CODE,))

    def command(self, run: HarnessRun) -> HarnessCommand:
        # Its session id groups nothing here (the rollout id in the URL does), but a
        # stable one makes a rollout's proxy records and Claude's own logs line up.
        session_id = uuid.uuid5(uuid.NAMESPACE_URL, run.rollout_id)
        argv = [
            self.executable("claude"),
            "--print",
            "--output-format", "json",
            "--model", run.model,
            "--max-turns", str(run.max_turns),
            "--allowedTools", _ALLOWED_TOOLS,
            "--session-id", str(session_id),
            "--", run.prompt,
        ]  # fmt: skip
        env = {
            **self.path_env(),
            **_QUIET,
            # Claude appends /v1/messages itself.
            "ANTHROPIC_BASE_URL": run.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": run.api_key,
            "CLAUDE_CONFIG_DIR": str(run.scratch_dir / "claude"),
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(run.max_tokens),
        }
        return HarnessCommand(argv=argv, env=env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        result = read_json_output(stdout)
        if not isinstance(result, dict) or not isinstance(result.get("result"), str):
            return None
        return result["result"]
