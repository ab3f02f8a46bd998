"""Each analytic of one rollout on hand-made trajectories whose value is known, including
the cases where it must not fire (docs/analytics.md defines each)."""

from __future__ import annotations

from components.analytics import rollout_analytics
from tests.components.analytics._trajectories import anthropic_rollout, chat_rollout, outcome, responses_rollout

OK = "[exit code 0]\n"
FAIL = "[exit code 1]\nTraceback (most recent call last):\n"


def _sh(command: str) -> tuple[str, dict]:
    return ("shell", {"command": command})


def _of(calls, **kwargs):
    return rollout_analytics("t-s0", "t", calls, outcome(**kwargs))


# Tool coverage ------------------------------------------------------------------------


def test_tool_coverage_counts_distinct_declared_tools_used_and_calls_per_tool() -> None:
    calls = anthropic_rollout(
        [([("Bash", {"command": "ls"}), ("Read", {"file_path": "a"})], [("a", False), ("x", False)]), ([("Bash", {"command": "pwd"})], [("/", False)])],
        tools=["Bash", "Read", "Write", "Edit"],
    )

    result = _of(calls)

    assert result.tool_calls == {"Bash": 2, "Read": 1}
    assert result.values()["tool_coverage"] == 2 / 4
    assert result.undeclared_calls == 0


def test_a_tool_no_request_declared_does_not_count_as_coverage() -> None:
    calls = chat_rollout([([("python", {"code": "1"}), _sh("ls")], ["error: unknown tool 'python'", OK])], tools=["shell", "read"])

    result = _of(calls)

    assert result.undeclared_calls == 1 and result.tool_calls == {"python": 1, "shell": 1}
    assert result.values()["tool_coverage"] == 1 / 2


def test_no_declared_tools_means_no_coverage_value() -> None:
    assert _of(chat_rollout([], tools=())).values()["tool_coverage"] is None


# Self-verification --------------------------------------------------------------------


def test_reading_back_a_written_file_is_self_verification() -> None:
    calls = chat_rollout([([_sh("echo hello > hello.txt")], [OK]), ([_sh("cat hello.txt")], [OK + "hello"])])

    assert _of(calls).verified is True
    assert _of(calls).values()["self_verification"] == 1.0


def test_running_tests_after_the_last_write_is_self_verification() -> None:
    calls = anthropic_rollout(
        [([("Edit", {"file_path": "/w/app.py", "old_string": "a", "new_string": "b"})], [("ok", False)]),
         ([("Bash", {"command": "python -m pytest -q"})], [("1 passed", False)])],
        tools=["Bash", "Edit"],
    )  # fmt: skip

    assert _of(calls).verified is True


def test_reading_a_file_the_agent_did_not_write_is_not_self_verification() -> None:
    calls = chat_rollout([([_sh("echo hello > hello.txt")], [OK]), ([_sh("cat other.txt")], [OK])])

    assert _of(calls).verified is False
    assert _of(calls).values()["self_verification"] == 0.0


def test_checking_before_the_last_write_is_not_self_verification() -> None:
    calls = chat_rollout(
        [([_sh("echo a > f.txt")], [OK]), ([_sh("cat f.txt")], [OK]), ([_sh("echo b > f.txt")], [OK])]
    )

    assert _of(calls).verified is False


def test_tests_run_before_anything_was_written_do_not_verify_a_later_write() -> None:
    calls = chat_rollout([([_sh("pytest -q")], [FAIL]), ([_sh("sed -i 's/a/b/' app.py")], [OK])])

    assert _of(calls).verified is False


def test_a_write_read_back_in_the_same_command_line_verifies() -> None:
    calls = chat_rollout([([_sh("printf x > out.txt && cat out.txt")], [OK + "x"])])

    assert _of(calls).verified is True


def test_a_rollout_that_wrote_nothing_has_no_self_verification_value() -> None:
    calls = chat_rollout([([_sh("cat poem.txt")], [OK])])

    assert _of(calls).verified is None and _of(calls).values()["self_verification"] is None


def test_responses_apply_patch_then_exec_reads_back() -> None:
    patch = "*** Begin Patch\n*** Add File: src/app.py\n+print(1)\n*** End Patch"
    calls = responses_rollout(
        [([("apply_patch", {"input": patch})], ["Done"]), ([("exec_command", {"cmd": "python src/app.py"})], ["Process exited with code 0\nOutput:\n1"])],
        tools=["apply_patch", "exec_command"],
    )

    assert _of(calls).verified is True and _of(calls).writes == 1


# Error recovery -----------------------------------------------------------------------


def test_an_error_fixed_by_a_later_successful_run_of_the_same_command_is_recovered() -> None:
    calls = chat_rollout(
        [([_sh("python app.py")], [FAIL]), ([_sh("sed -i 's/x/y/' app.py")], [OK]), ([_sh("python app.py")], [OK])]
    )

    result = _of(calls)

    assert (result.errors, result.recovered, result.repeated) == (1, 1, 0)
    assert result.values()["error_recovery"] == 1.0


def test_the_same_failing_command_again_is_not_recovery() -> None:
    calls = chat_rollout([([_sh("python app.py")], [FAIL]), ([_sh("python app.py")], [FAIL])])

    result = _of(calls)

    assert (result.errors, result.recovered, result.repeated) == (2, 0, 1)
    assert result.values()["error_recovery"] == 0.0


def test_an_unrelated_success_after_an_error_is_not_recovery() -> None:
    calls = chat_rollout([([_sh("pytest -q")], [FAIL]), ([_sh("ls")], [OK])])

    assert _of(calls).recovered == 0 and _of(calls).values()["error_recovery"] == 0.0


def test_giving_up_after_an_error_is_not_recovery() -> None:
    calls = anthropic_rollout([([("Bash", {"command": "make"})], [("Exit code 2", True)])], tools=["Bash"])

    result = _of(calls, passed=False)

    assert (result.errors, result.recovered) == (1, 0)


def test_no_error_means_no_recovery_value() -> None:
    calls = chat_rollout([([_sh("ls")], [OK])])

    assert _of(calls).errors == 0 and _of(calls).values()["error_recovery"] is None


# Multi-step completion, turns and tokens -----------------------------------------------


def test_multi_step_completion_is_the_verdict_of_rollouts_of_two_or_more_turns() -> None:
    two_turns = chat_rollout([([_sh("wc -l < poem.txt")], [OK + "8"])])

    assert _of(two_turns).values()["multi_step_completion"] == 1.0
    assert _of(two_turns, passed=False).values()["multi_step_completion"] == 0.0
    assert _of(two_turns, status="timeout").values()["multi_step_completion"] == 0.0  # graded: the agent's doing


def test_single_turn_and_ungraded_rollouts_have_no_multi_step_value() -> None:
    assert _of(chat_rollout([])).values()["multi_step_completion"] is None  # one call: answered outright
    two_turns = chat_rollout([([_sh("ls")], [OK])])
    assert _of(two_turns, status="infra_error").values()["multi_step_completion"] is None


def test_turns_and_tokens_count_the_judged_attempt_only() -> None:
    first = chat_rollout([([_sh("ls")], [OK])])  # attempt 0: 2 calls, cut by an engine failure
    retry = [c.model_copy(update={"call_index": c.call_index + 2, "tags": {"attempt": 1}}) for c in chat_rollout([])]
    judged = outcome()
    judged["extra"]["attempts"] = 2

    result = rollout_analytics("t-s0", "t", first + retry, judged)

    assert result.turns == 1
    assert (result.prompt_tokens, result.completion_tokens) == (10, 3)  # the builder: 10 + index prompt ids, 3 sampled


def test_a_missing_or_invalid_outcome_makes_the_rollout_unreadable() -> None:
    calls = chat_rollout([])
    missing = rollout_analytics("t-s0", "t", calls, None)
    broken = rollout_analytics("t-s0", "t", calls, {"rollout_id": "t-s0"})

    assert missing.problem == "no outcome record"
    assert broken.problem.startswith("invalid outcome")
    assert set(broken.values().values()) == {None}
