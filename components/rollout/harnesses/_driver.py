"""Python harnesses run as a driver script under the Python of their own venv (browser-use, cua-agent).

Such a harness is a library without a headless command line for what a rollout needs
(attach to the runner's browser, drive the runner's display), so a small driver script
beside its adapter builds the agent and runs it. The adapter writes the driver's settings
to a file in the scratch folder (the key stays out of the process list) and reads the
final answer from the JSON result file the driver writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from components.rollout.harnesses.base import HarnessAdapter, HarnessCommand, HarnessRun, answer_in_json_file


class DriverHarness(HarnessAdapter):
    """A harness run as ``<venv>/python -I DRIVER <scratch>/<name>-settings.json``."""

    driver: ClassVar[Path]
    answer_key: ClassVar[str]  # the result file's field holding the final answer

    def result_file(self, run: HarnessRun) -> Path:
        return run.scratch_dir / f"{self.name}-result.json"

    def driver_command(self, run: HarnessRun, settings: dict[str, Any], env: dict[str, str]) -> HarnessCommand:
        settings_file = run.scratch_dir / f"{self.name}-settings.json"
        settings = {"result_file": str(self.result_file(run)), **settings}
        settings_file.write_text(json.dumps(settings, indent=2) + "\n")
        # -I: the driver's own folder holds the adapter, whose module name would shadow the package.
        argv = [self.executable("python"), "-I", str(self.driver), str(settings_file)]
        return HarnessCommand(argv=argv, env={**self.path_env(), **env})

    def final_answer(self, run: HarnessRun, stdout: str) -> str | None:
        return answer_in_json_file(self.result_file(run), self.answer_key)
