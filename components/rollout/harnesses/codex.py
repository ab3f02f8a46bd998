"""Codex CLI (``codex exec``), speaking the OpenAI Responses API to the proxy."""

from __future__ import annotations

import json

from components.rollout.harnesses._install import NpmInstaller
from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun
from components.rollout.harnesses.versions import CODEX

_PROVIDER = "openforge"
_KEY_VARIABLE = "OPENFORGE_ROLLOUT_KEY"


def _toml(value: object) -> str:
    # Strings and numbers only: JSON's escapes are valid TOML basic strings.
    return json.dumps(value)


class Codex(HarnessAdapter):
    name = "codex"
    installer = NpmInstaller((CODEX,))

    def _last_message(self, run: HarnessRun) -> str:
        return str(run.scratch_dir / "last-message.txt")

    def _config(self, run: HarnessRun) -> str:
        return "\n".join(
            [
                f"model = {_toml(run.model)}",
                f"model_provider = {_toml(_PROVIDER)}",
                # 0.171.0 has no output-token limit for a provider (it ignores
                # model_max_output_tokens): the engine's default applies.
                "check_for_update_on_startup = false",
                "",
                # Its metrics exporter (OTLP to its vendor) is on by default, and at exit
                # it waits ~20 s for the refused export.
                "[analytics]",
                "enabled = false",
                "",
                # The curated-plugin sync fetches a repository from GitHub at every start.
                "[features]",
                "plugins = false",
                "",
                f"[model_providers.{_PROVIDER}]",
                f"name = {_toml(_PROVIDER)}",
                f"base_url = {_toml(run.base_url)}",
                f"env_key = {_toml(_KEY_VARIABLE)}",
                'wire_api = "responses"',
                "request_max_retries = 2",
                "stream_max_retries = 2",
                "",
            ]
        )

    def command(self, run: HarnessRun) -> HarnessCommand:
        codex_home = run.scratch_dir / "codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(self._config(run))
        # Codex's own sandbox (Landlock and seccomp, often missing in containers) is left
        # off only when the runner confines it (components/rollout/_confine.py); otherwise
        # it writes only its workspace, and commands that need more fail inside it.
        sandbox = ["--dangerously-bypass-approvals-and-sandbox"] if run.confined else ["--sandbox", "workspace-write"]
        argv = [
            self.executable("codex"), "exec",
            "--skip-git-repo-check",
            *sandbox,
            "--cd", str(run.workspace),
            "--output-last-message", self._last_message(run),
            "--", run.prompt,
        ]  # fmt: skip
        env = {**self.path_env(), "CODEX_HOME": str(codex_home), _KEY_VARIABLE: run.api_key}
        return HarnessCommand(argv=argv, env=env)

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        try:
            with open(self._last_message(run)) as file:
                return file.read()
        except OSError:
            return None
