"""What every environment shares: the setup error, the step limit, and finding its programs.

An agent that never stops (cua-agent's Qwen loop ignores its own terminate action:
docs/harnesses.md, "cua-agent") must be stopped by the environment's owner, so each environment counts
the steps taken through it and raises ``StepLimitExceeded`` past its limit.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from components.core.validation import join_errors

_Config = TypeVar("_Config", bound=BaseModel)


class EnvironmentSetupError(RuntimeError):
    """An environment that cannot start; the message names what is missing and the fix."""


class StepLimitExceeded(RuntimeError):
    """The episode took more steps than its environment allows; the owner ends it."""


class StepCounter:
    """Counts steps; the step past ``limit`` raises instead of happening."""

    def __init__(self, limit: int, environment: str) -> None:
        self.limit, self.environment, self.taken = limit, environment, 0

    def take(self, what: str) -> None:
        if self.taken >= self.limit:
            raise StepLimitExceeded(
                f"{self.environment}: step limit of {self.limit} reached, refused step {self.taken + 1} ({what}); "
                f"end the episode, or raise max_steps in the environment's config if the task needs more"
            )
        self.taken += 1

    def reset(self) -> None:
        self.taken = 0


def require_program(name: str, apt_packages: str, configured: str | Path | None = None) -> Path:
    """The path of ``name`` (or of the configured path); EnvironmentSetupError naming the apt packages."""
    found = Path(configured) if configured else shutil.which(name)
    if found is None or not Path(found).is_file():
        where = f"{configured} does not exist" if configured else f"{name} is not on PATH"
        raise EnvironmentSetupError(f"{where}; install it with: apt-get install -y {apt_packages}")
    return Path(found)


def parse_config(model: type[_Config], data: Mapping[str, Any] | _Config | None, what: str) -> _Config:
    """Validate ``data`` as ``model``; EnvironmentSetupError naming each bad field and the rule it broke."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(dict(data or {}))
    except ValidationError as exc:
        fields = ", ".join(model.model_fields)
        problems = join_errors(exc, f"misspelled? fields: {fields}")
        raise EnvironmentSetupError(f"invalid {what} config: {problems}") from None
