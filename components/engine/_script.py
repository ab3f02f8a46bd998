"""Scripted mode: replay fixed assistant turns so a random-weights model can act.

End-to-end tests need the policy to call a tool; random weights never would. A script
lists the assistant turns to produce. The turn used is the number of assistant messages
already in the request, so a multi-turn agent loop walks through the script. Its tokens
are forced through the model (teacher forcing): the token ids and their logprobs are the
model's real numbers for that text, exactly what training would see. A turn is a
``ScriptedTurn`` (components/core/scripted_turns.py), so one script drives every harness.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from components.core.scripted_turns import ScriptedTurn
from components.core.validation import join_errors


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[ScriptedTurn]

    def turn_at(self, index: int) -> ScriptedTurn | None:
        """The turn after ``index`` assistant turns, or None once the script is spent."""
        return self.turns[index] if 0 <= index < len(self.turns) else None


class ScriptError(ValueError):
    """A script file that cannot be used; the message names the file and the problem."""


def load_script(path: str | Path) -> Script:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ScriptError(f"script {path} is not valid JSON: {exc}") from None
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = join_errors(exc)
        raise ScriptError(
            f'script {path} is invalid ({problems}); expected {{"turns": [{{"content": "...", '
            '"tool_calls": [{"name": "...", "arguments": {...}} or {"shell": "..."} or '
            '{"write_file": {"path": "...", "content": "..."}}]}]}'
        ) from None
