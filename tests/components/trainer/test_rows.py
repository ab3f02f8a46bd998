"""The prefix merge: continuations extend a row with masked context, anything else starts a new row."""

from __future__ import annotations

import pytest

from components.trainer.rows import COMPLETION_TOO_LONG, PROMPT_TOO_LONG, TemperatureMismatchError, merge_calls, split_row


def test_call_extending_the_row_appends_context_masked_and_completion_sampled(call):
    calls = [call(0, [1, 2, 3], [4, 5]), call(1, [1, 2, 3, 4, 5, 20, 21], [6], logprob=-0.25)]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, counts.breaks) == (1, 0)
    [row] = rows
    assert row.prompt == [1, 2, 3]
    assert row.response == [4, 5, 20, 21, 6]
    assert row.response_mask == [1, 1, 0, 0, 1]
    assert row.logprobs == [-0.5, -0.5, 0.0, 0.0, -0.25]


def test_rewritten_history_starts_a_rewrite_branch(call):
    # Call 2 drops the first exchange (a trimmed context): not an extension of the row.
    calls = [
        call(0, [1, 2, 3], [4, 5]),
        call(1, [1, 2, 3, 4, 5, 20], [6]),
        call(2, [1, 2, 30, 6], [7]),
        call(3, [1, 2, 30, 6, 7, 31], [8]),
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, counts.branches, counts.breaks) == (2, {"subagent": 0, "rewrite": 1}, 0)
    assert [r.tokens() for r in rows] == [[1, 2, 3, 4, 5, 20, 6], [1, 2, 30, 6, 7, 31, 8]]
    assert rows[1].response_mask == [1, 0, 1]
    # It leaves call 1 (the latest of the two sharing [1, 2]) inside that call's prompt.
    assert [(r.branch_kind, r.parent_call) for r in rows] == [(None, None), ("rewrite", 1)]


def test_prompt_equal_to_the_row_continues_with_no_context_tokens(call):
    rows, counts = merge_calls("t-s0", [call(0, [1, 2], [3]), call(1, [1, 2, 3], [4])], temperature=1.0)

    assert counts.continuations == 1
    assert rows[0].response == [3, 4] and rows[0].response_mask == [1, 1]


def test_side_calls_failed_calls_and_superseded_calls_are_left_out(call):
    calls = [
        call(0, [1, 2], [3]),
        call(1, [40, 41], [42], tags={"side_call": True}),  # e.g. a title call
        call(2, [1, 2, 3, 9], [], upstream_status=500, error="upstream 500"),
        call(3, [1, 2, 3, 9], [5]),  # answered, but the harness timed out and retried
        call(4, [1, 2, 3, 9], [6], tags={"retry_of": 3}),
        call(5, [1, 2, 3, 9, 6, 10], [7]),  # a retry that overtook the still-running call 6 ...
        call(6, [1, 2, 3, 9, 6, 10], [8], tags={"superseded_by": 5}),  # ... recorded after it
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert counts.superseded == 2
    assert (counts.continuations, counts.breaks) == (2, 0)
    assert rows[0].tokens() == [1, 2, 3, 9, 6, 10, 7]


def test_temperature_mismatch_names_both_values(call):
    with pytest.raises(TemperatureMismatchError) as err:
        merge_calls("t-s0", [call(0, [1], [2], temperature=0.7)], temperature=1.0)

    assert "0.7" in str(err.value) and "1.0" in str(err.value)


def test_missing_recorded_temperature_is_refused(call):
    with pytest.raises(TemperatureMismatchError, match="no recorded temperature"):
        merge_calls("t-s0", [call(0, [1], [2], temperature=None)], temperature=1.0)


def _agent_rollout(call, turns: int, system: int = 6, completion: int = 3, tool: int = 2):
    """A long multi-turn rollout: each call re-sends the conversation plus a tool output."""
    calls, prompt, next_id = [], list(range(1, system + 1)), 100
    for index in range(turns):
        answer = list(range(next_id, next_id + completion))
        calls.append(call(index, list(prompt), answer, logprob=-0.1 * (index + 1)))
        output = list(range(next_id + completion, next_id + completion + tool))
        prompt += answer + output
        next_id += completion + tool
    return calls


def _sampled(rows):
    """Every trained (token, logprob) with the position it sits at in the conversation."""
    return sorted(
        (len(r.prompt) + i, token, logprob)
        for r in rows
        for i, (token, mask, logprob) in enumerate(zip(r.response, r.response_mask, r.logprobs))
        if mask
    )


@pytest.mark.parametrize("max_response", [3, 4, 8, 12, 13, 40])
def test_splitting_keeps_every_sampled_token_exactly_once(call, max_response):
    [row], _ = merge_calls("t-s0", _agent_rollout(call, turns=6), temperature=1.0)

    pieces, counts = split_row(row, max_prompt_tokens=40, max_response_tokens=max_response)

    assert _sampled(pieces) == _sampled([row])  # none lost, none duplicated, each at its place
    assert counts.dropped == {} and counts.splits == len(pieces) - 1
    assert all(len(p.response) <= max_response and len(p.prompt) <= 40 for p in pieces)
    assert all(p.response_mask[-1] == 1 for p in pieces)  # the reward's token is a sampled one
    assert all(p.rollout_id == "t-s0" for p in pieces)


def test_a_piece_starts_with_its_first_calls_full_prompt_and_masks_context(call):
    calls = _agent_rollout(call, turns=3)
    [row], _ = merge_calls("t-s0", calls, temperature=1.0)

    pieces, counts = split_row(row, max_prompt_tokens=40, max_response_tokens=8)

    assert counts.splits == 1
    assert [p.prompt for p in pieces] == [calls[0].prompt_token_ids, calls[2].prompt_token_ids]
    assert pieces[0].response_mask == [1, 1, 1, 0, 0, 1, 1, 1]  # call 1's tool output stays context
    assert pieces[1].response == calls[2].completion_token_ids and pieces[1].logprobs == pytest.approx([-0.3] * 3)


def test_only_a_call_over_the_limits_by_itself_is_dropped_with_its_reason(call):
    calls = _agent_rollout(call, turns=4)
    calls[1] = call(1, calls[1].prompt_token_ids, list(range(200, 210)))  # a 10-token completion
    calls[2:] = _continue(call, calls[:2], turns=2)
    [row], _ = merge_calls("t-s0", calls, temperature=1.0)

    pieces, counts = split_row(row, max_prompt_tokens=len(calls[3].prompt_token_ids) - 1, max_response_tokens=5)

    # Call 1's completion alone is over 5; call 3's prompt alone is over the prompt limit.
    assert counts.dropped == {COMPLETION_TOO_LONG: 1, PROMPT_TOO_LONG: 1}
    assert [p.prompt for p in pieces] == [calls[0].prompt_token_ids, calls[2].prompt_token_ids]
    kept = _sampled([row])
    lost = {len(row.prompt) + i for a, b in (row.completions[1], row.completions[3]) for i in range(a, b)}
    assert _sampled(pieces) == [t for t in kept if t[0] not in lost]


def _continue(call, calls, turns):
    """``turns`` more calls extending the conversation of ``calls``."""
    prompt = calls[-1].prompt_token_ids + calls[-1].completion_token_ids + [50, 51]
    more = []
    for index in range(len(calls), len(calls) + turns):
        answer = [60 + index, 61 + index, 62 + index]
        more.append(call(index, list(prompt), answer))
        prompt = prompt + answer + [52, 53]
    return more


def test_only_the_latest_attempt_is_merged(call):
    from components.trainer.rows import merge_calls

    calls = [
        call(0, [1, 2], [3]),  # attempt 0: the engine failed after this call
        call(1, [1, 2, 3, 9], [], upstream_status=502, error="bad gateway"),
        call(2, [1, 2], [4], tags={"attempt": 1}),
        call(3, [1, 2, 4, 9], [5], tags={"attempt": 1}),
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert [r.tokens() for r in rows] == [[1, 2, 4, 9, 5]] and counts.breaks == 0


def test_forced_tokens_stay_in_the_row_as_context_the_policy_did_not_choose(call):
    # Call 1 sampled one token, then the engine forced two (a scripted turn); call 2 was forced whole.
    calls = [
        call(0, [1, 2, 3], [4, 5]),
        call(1, [1, 2, 3, 4, 5, 20], [6, 7, 8], forced_from=1),
        call(2, [1, 2, 3, 4, 5, 20, 6, 7, 8, 21], [9], forced_from=0),
    ]

    [row], _ = merge_calls("t-s0", calls, temperature=1.0)

    assert row.response == [4, 5, 20, 6, 7, 8, 21, 9]
    assert row.response_mask == [1, 1, 0, 1, 0, 0, 0, 0]
    assert (row.sampled_tokens(), row.forced_tokens()) == (3, 3)
    assert row.logprobs[3:6] == [-0.5, -0.5, -0.5]  # the model's own logprobs are kept, masked


def test_a_forced_from_past_the_completion_means_all_sampled(call):
    [row], _ = merge_calls("t-s0", [call(0, [1], [2, 3], forced_from=5)], temperature=1.0)
    assert row.response_mask == [1, 1] and row.forced_tokens() == 0
