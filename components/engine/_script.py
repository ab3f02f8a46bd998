"""Scripted mode: replay fixed assistant turns so a random-weights model can act.

End-to-end tests need the policy to call a tool; random weights never would. A script
lists the assistant turns to produce. The turn used is the number of assistant messages
already in the request, so a multi-turn agent loop walks through the script. Its tokens
are forced through the model (teacher forcing): the token ids and their logprobs are the
model's real numbers for that text, exactly what training would see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from components.core.validation import join_errors


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)

    def as_message(self) -> dict[str, Any]:
        """The assistant message the chat template renders for this turn."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: list[ScriptedTurn]

    def turn_for(self, messages: list[dict[str, Any]]) -> ScriptedTurn | None:
        """The turn to play for this conversation, or None once the script is spent."""
        index = sum(1 for m in messages if m.get("role") == "assistant")
        return self.turns[index] if index < len(self.turns) else None


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
            '"tool_calls": [{"name": "...", "arguments": {...}}]}]}'
        ) from None
