"""Scripted assistant turns: what a task or a test asks the dev engine to say, in any harness.

One turn is text and tool calls. A tool call names its tool outright (``name`` +
``arguments``) or says what to do and lets the request decide how: ``shell`` runs a
command with whichever shell tool the request declares (Claude Code's ``Bash{command}``,
Codex's ``exec_command{cmd}``, OpenClaw's ``exec``, mini-swe-agent's ``bash``),
``write_file`` writes a file with the declared file-writing tool, or through the shell
tool when there is none. One turn thus reads the same in every harness.

A contract between the steps: tasks write candidate turns (``task.yaml`` ``choices``,
components/core/choices.py), the dev engine plays them (scripted and choice modes).
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MissingToolError(ValueError):
    """The request declares no tool that a scripted call can be played with."""


# What makes a declared tool a shell or a file writer: its parameter names. Names, when
# several tools qualify, prefer the plain shells (OpenClaw also declares `process`).
_COMMAND_PARAMS = ("command", "cmd")
_PATH_PARAMS = ("file_path", "path", "filename")
_CONTENT_PARAMS = ("content", "contents", "text")
_SHELL_NAMES = ("bash", "shell", "exec", "exec_command")
_WRITER_NAMES = ("write", "write_file", "create_file")


class ScriptedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    content: str


class ScriptedToolCall(BaseModel):
    """One tool call: ``name`` + ``arguments``, or ``shell``, or ``write_file``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    shell: str | None = Field(None, min_length=1, description="A command for whichever shell tool is declared.")
    write_file: ScriptedFile | None = Field(None, description="A file for whichever writing tool is declared.")

    @model_validator(mode="after")
    def _one_form(self) -> "ScriptedToolCall":
        forms = [form for form in ("name", "shell", "write_file") if getattr(self, form) is not None]
        if len(forms) != 1:
            raise ValueError(f"a tool call needs exactly one of name, shell, write_file (got {forms or 'none'})")
        if self.arguments and self.name is None:
            raise ValueError("arguments go with name; shell and write_file choose the arguments themselves")
        return self

    def resolve(self, tools: list[dict[str, Any]] | None) -> tuple[str, dict[str, Any]]:
        """``(tool name, arguments)`` for this request's declared tools."""
        if self.name is not None:
            return self.name, self.arguments
        functions = [t["function"] for t in tools or [] if t.get("type") == "function" and "function" in t]
        if self.write_file is not None:
            writer = _pick(functions, _WRITER_NAMES, _PATH_PARAMS, _CONTENT_PARAMS)
            if writer is not None:
                name, (path_param, content_param) = writer
                return name, {path_param: self.write_file.path, content_param: self.write_file.content}
        shell = _pick(functions, _SHELL_NAMES, _COMMAND_PARAMS)
        if shell is None:
            declared = [f.get("name") for f in functions]
            wanted = "a shell or file-writing" if self.write_file is not None else "a shell"
            raise MissingToolError(
                f"the turn asks for {wanted} tool call, but the request declares no such tool "
                f"(a function with a {' or '.join(_COMMAND_PARAMS)} parameter); it declares {declared}"
            )
        name, (command_param,) = shell
        return name, {command_param: self.shell if self.shell is not None else _write_command(self.write_file)}


def _pick(
    functions: list[dict[str, Any]], preferred: tuple[str, ...], *param_groups: tuple[str, ...]
) -> tuple[str, tuple[str, ...]] | None:
    """The first function having one parameter of each group, preferred names first."""
    matches = []
    for function in functions:
        properties = (function.get("parameters") or {}).get("properties") or {}
        chosen = tuple(next((p for p in group if p in properties), None) for group in param_groups)
        if all(chosen):
            matches.append((function["name"], chosen))
    matches.sort(key=lambda match: match[0].lower() not in preferred)  # stable: declared order otherwise
    return matches[0] if matches else None


def _write_command(file: ScriptedFile | None) -> str:
    assert file is not None
    return f"printf %s {shlex.quote(file.content)} > {shlex.quote(file.path)}"


class ScriptedTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    sampled_text: int = Field(
        0,
        ge=0,
        description="Tokens of text the model samples itself before the scripted tool calls or end of turn "
        "(its reasoning, with ids a real policy would choose); the turn's content is then that text.",
    )

    @model_validator(mode="after")
    def _one_kind_of_text(self) -> "ScriptedTurn":
        if self.sampled_text and self.content:
            raise ValueError("a turn with sampled_text takes its text from the model: leave content empty")
        return self

    def as_message(self, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The assistant message the chat template renders for this turn, given the request's tools."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"type": "function", "function": {"name": name, "arguments": arguments}}
                for name, arguments in (call.resolve(tools) for call in self.tool_calls)
            ]
        return message
