"""Scripted turns that say what to do (shell, write_file) and let the request's tools decide how."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.engine._protocol import ApiError
from components.core.scripted_turns import MissingToolError, ScriptedToolCall
from components.engine._script import ScriptError, load_script


def _tool(name: str, **params: str) -> dict[str, Any]:
    properties = {param: {"type": kind} for param, kind in params.items()}
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": properties}}}


# The shell and file tools each real harness declares (docs/harnesses.md, "The scripted engine
# drives all of them"), with a decoy beside them.
CLAUDE_CODE = [_tool("Read", file_path="string"), _tool("Write", file_path="string", content="string"),
               _tool("Bash", command="string", timeout="number")]  # fmt: skip
CODEX = [_tool("write_stdin", session_id="number", chars="string"), _tool("exec_command", cmd="string", workdir="string")]
OPENCLAW = [_tool("process", action="string", command="string"), _tool("exec", command="string", title="string"),
            _tool("write", path="string", content="string")]  # fmt: skip
MINI = [_tool("bash", command="string")]


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (CLAUDE_CODE, ("Bash", {"command": "ls"})),
        (CODEX, ("exec_command", {"cmd": "ls"})),
        (OPENCLAW, ("exec", {"command": "ls"})),  # not `process`, which also takes a command
        (MINI, ("bash", {"command": "ls"})),
    ],
)
def test_shell_call_uses_the_shell_tool_the_request_declares(tools: list, expected: tuple) -> None:
    assert ScriptedToolCall(shell="ls").resolve(tools) == expected


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        (CLAUDE_CODE, ("Write", {"file_path": "a.txt", "content": "x y"})),
        (OPENCLAW, ("write", {"path": "a.txt", "content": "x y"})),
        (CODEX, ("exec_command", {"cmd": "printf %s 'x y' > a.txt"})),  # no writer: through the shell
    ],
)
def test_write_file_prefers_a_writing_tool_and_falls_back_to_the_shell(tools: list, expected: tuple) -> None:
    assert ScriptedToolCall(write_file={"path": "a.txt", "content": "x y"}).resolve(tools) == expected


def test_named_call_is_played_as_written_whatever_is_declared() -> None:
    call = ScriptedToolCall(name="read_file", arguments={"path": "README.md"})
    assert call.resolve(None) == ("read_file", {"path": "README.md"})


def test_shell_call_without_a_shell_tool_is_a_clear_error() -> None:
    with pytest.raises(MissingToolError, match=r"declares no such tool .*\['Read'\]"):
        ScriptedToolCall(shell="ls").resolve([_tool("Read", file_path="string")])


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        ({"name": "x", "shell": "ls"}, "exactly one of name, shell, write_file"),
        ({}, "exactly one of name, shell, write_file"),
        ({"shell": "ls", "arguments": {"a": 1}}, "arguments go with name"),
    ],
)
def test_script_file_with_an_ambiguous_call_names_the_problem(tmp_path: Path, call: dict, problem: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [call]}]}))
    with pytest.raises(ScriptError, match=problem):
        load_script(path)


def test_sampled_text_turn_takes_no_scripted_content(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"sampled_text": 8, "content": "x"}]}))
    with pytest.raises(ScriptError, match="takes its text from the model"):
        load_script(path)
