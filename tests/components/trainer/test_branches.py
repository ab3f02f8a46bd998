"""The merge as a graph: calls continue whichever row they extend; the rest are branches of a kind."""

from __future__ import annotations

from components.trainer.rows import merge_calls

TASK = "Report whether greeting.txt exists."


def _spawning(call, index, prompt, completion, tool="Agent", argument="prompt"):
    """An Anthropic-style call whose answer hands TASK to a subagent tool."""
    response = {"content": [{"type": "tool_use", "id": "t1", "name": tool, "input": {"description": "check", argument: TASK}}]}
    return call(index, prompt, completion, api="anthropic.messages", response=response)


def _subagent(call, index, prompt, completion, text=TASK):
    request = {"system": "sub", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    return call(index, prompt, completion, api="anthropic.messages", request=request)


def _sampled(calls) -> int:
    return sum(len(c.completion_token_ids) for c in calls if not c.tags.get("side_call"))


def test_interleaved_subagent_is_a_branch_and_the_parent_continues_its_row(call):
    calls = [
        _spawning(call, 0, [1, 2, 3], [4, 5]),
        _subagent(call, 1, [1, 9, 10], [11]),  # the subagent: its own system prompt and history
        call(2, [40, 41], [42], tags={"side_call": "title"}),  # not the agent's work
        _subagent(call, 3, [1, 9, 10, 11, 12], [13]),  # the subagent's second turn
        call(4, [1, 2, 3, 4, 5, 6, 13], [7]),  # the parent, after the subagent's report
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, counts.branches, counts.breaks) == (2, {"subagent": 1, "rewrite": 0}, 0)
    assert [r.tokens() for r in rows] == [[1, 2, 3, 4, 5, 6, 13, 7], [1, 9, 10, 11, 12, 13]]
    assert [(r.branch_kind, r.parent_call) for r in rows] == [(None, None), ("subagent", 0)]
    assert sum(r.sampled_tokens() for r in rows) == _sampled(calls) == 5


def test_codex_spawn_agent_through_the_responses_api_is_recognised(call):
    response = {"output": [{"type": "function_call", "name": "spawn_agent", "arguments": f'{{"message": "{TASK}"}}'}]}
    parent = call(0, [1, 2], [3], api="responses", response=response)
    request = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}]}
    child = call(1, [1, 8], [9], api="responses", request=request)

    rows, counts = merge_calls("t-s0", [parent, child], temperature=1.0)

    assert counts.branches["subagent"] == 1 and rows[1].parent_call == 0


def test_a_first_user_message_no_tool_handed_over_is_not_a_subagent(call):
    calls = [_spawning(call, 0, [1, 2, 3], [4]), _subagent(call, 1, [1, 9], [11], text="another task")]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert counts.branches["subagent"] == 0 and rows[1].branch_kind == "rewrite"


def test_plain_continuation_has_no_branch(call):
    calls = [call(0, [1, 2], [3]), call(1, [1, 2, 3, 4], [5]), call(2, [1, 2, 3, 4, 5, 6], [7])]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, sum(counts.branches.values()), counts.breaks, len(rows)) == (2, 0, 0, 1)


def test_re_rendered_answer_and_nothing_shared_are_counted_breaks(call):
    calls = [
        call(0, [1, 2], [3, 4]),
        call(1, [1, 2, 3, 99], [5]),  # leaves call 0 inside its sampled answer: re-rendered
        call(2, [70, 71], [72]),  # shares nothing with any earlier call
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.breaks, sum(counts.branches.values())) == (2, 0)
    assert [(r.branch_kind, r.parent_call) for r in rows] == [(None, None), ("break", 0), ("break", None)]
    assert sum(r.sampled_tokens() for r in rows) == _sampled(calls)


def test_history_cut_back_to_an_earlier_call_is_a_rewrite_of_that_call(call):
    # Call 2 goes on from call 0's answer, dropping call 1's exchange.
    calls = [call(0, [1, 2], [3]), call(1, [1, 2, 3, 4], [5]), call(2, [1, 2, 3, 8], [9])]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert counts.branches["rewrite"] == 1 and rows[1].parent_call == 0


def test_a_call_continues_the_longest_row_it_extends(call):
    # Call 2 extends both rows' tokens only in the sense of the branch: it must join call 1's row.
    calls = [call(0, [1, 2], [3]), call(1, [1, 5], [6]), call(2, [1, 5, 6, 7], [8])]

    rows, _ = merge_calls("t-s0", calls, temperature=1.0)

    assert [r.tokens() for r in rows] == [[1, 2, 3], [1, 5, 6, 7, 8]]
