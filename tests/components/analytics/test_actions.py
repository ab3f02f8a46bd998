"""The rollout's tool calls and results, read alike from every recorded API, and what counts as an error."""

from __future__ import annotations

import pytest

from components.analytics.actions import declared_tools, result_is_error, rollout_actions
from tests.components.analytics._trajectories import anthropic_rollout, chat_rollout, responses_rollout


def test_chat_calls_carry_their_results_and_the_last_call_is_unanswered() -> None:
    calls = chat_rollout([([("shell", {"command": "ls"}), ("shell", {"command": "pwd"})], ["[exit code 0]\na", "[exit code 0]\n/w"])])

    actions = rollout_actions(calls)

    assert [(a.tool, a.arguments["command"], a.result) for a in actions] == [
        ("shell", "ls", "[exit code 0]\na"),
        ("shell", "pwd", "[exit code 0]\n/w"),
    ]
    assert [a.call_index for a in actions] == [0, 0]
    assert declared_tools(calls) == {"shell"}


def test_a_call_the_rollout_ended_on_has_no_result() -> None:
    calls = chat_rollout([([("shell", {"command": "ls"})], ["[exit code 0]"])])[:1]  # the harness stopped after call 0

    (action,) = rollout_actions(calls)

    assert action.result is None and not action.failed


def test_anthropic_is_error_reaches_the_result_through_the_translation() -> None:
    calls = anthropic_rollout([([("Bash", {"command": "make"})], [("make: *** no rule", True)])], tools=["Bash", "Read"])

    (action,) = rollout_actions(calls)

    assert action.tool == "Bash" and action.failed
    assert declared_tools(calls) == {"Bash", "Read"}


def test_responses_function_calls_and_outputs_pair_by_call_id() -> None:
    calls = responses_rollout([([("exec_command", {"cmd": "false"})], ["Process exited with code 1\nOutput:\n"])], tools=["exec_command"])

    (action,) = rollout_actions(calls)

    assert (action.tool, action.arguments, action.failed) == ("exec_command", {"cmd": "false"}, True)


@pytest.mark.parametrize(
    "text",
    [
        "Error: Exit code 1\ntraceback",  # Claude Code's is_error, as the proxy translates it
        "error: unknown tool 'sh'; the only tool is 'shell'",  # the reference harness refusing a call
        "[exit code 2]\nls: cannot access",  # the reference harness's shell
        "Exit code: 1\nWall time: 0.1 seconds\nOutput:\n",  # Codex's shell
        "Chunk ID: 1\nWall time: 0.0 s\nProcess exited with code 127\nOutput:\nsh: nope: not found",  # Codex's exec_command
        '{"output": "boom", "metadata": {"exit_code": 1}}',  # Codex's JSON result
        "<returncode>1</returncode>\n<output>x</output>",  # mini-swe-agent
        "[timed out after 30s (killed)]\n",
    ],
)
def test_error_results(text: str) -> None:
    assert result_is_error(text)


@pytest.mark.parametrize(
    "text",
    [
        "[exit code 0]\nerror: this is the program's own output",  # exit 0: the word error later is output
        "Process exited with code 0\nOutput:\n3 errors found",
        "hello.txt\n",
        "x" * 400 + "exit code 1",  # past the status head: the command's output, not the harness's report
    ],
)
def test_results_that_are_not_errors(text: str) -> None:
    assert not result_is_error(text)
