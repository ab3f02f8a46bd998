"""The prefix merge: continuations extend a row with masked context, anything else starts a new row."""

from __future__ import annotations

import pytest

from components.trainer.rows import Row, TemperatureMismatchError, fit_row, merge_calls


def test_call_extending_the_row_appends_context_masked_and_completion_sampled(call):
    calls = [call(0, [1, 2, 3], [4, 5]), call(1, [1, 2, 3, 4, 5, 20, 21], [6], logprob=-0.25)]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, counts.breaks) == (1, 0)
    [row] = rows
    assert row.prompt == [1, 2, 3]
    assert row.response == [4, 5, 20, 21, 6]
    assert row.response_mask == [1, 1, 0, 0, 1]
    assert row.logprobs == [-0.5, -0.5, 0.0, 0.0, -0.25]


def test_rewritten_history_starts_a_new_row_and_counts_a_break(call):
    # Call 2 drops the first exchange (a trimmed context): not an extension of the row.
    calls = [
        call(0, [1, 2, 3], [4, 5]),
        call(1, [1, 2, 3, 4, 5, 20], [6]),
        call(2, [1, 2, 30, 6], [7]),
        call(3, [1, 2, 30, 6, 7, 31], [8]),
    ]

    rows, counts = merge_calls("t-s0", calls, temperature=1.0)

    assert (counts.continuations, counts.breaks) == (2, 1)
    assert [r.tokens() for r in rows] == [[1, 2, 3, 4, 5, 20, 6], [1, 2, 30, 6, 7, 31, 8]]
    assert rows[1].response_mask == [1, 0, 1]


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


def test_fit_row_drops_long_prompts_and_truncates_to_a_sampled_last_token():
    row = Row("r", prompt=[1, 2, 3], response=[4, 5, 20, 21, 6], response_mask=[1, 1, 0, 0, 1], logprobs=[-1.0] * 5)

    assert fit_row(row, max_prompt_tokens=2, max_response_tokens=10) == (None, False)
    assert fit_row(row, max_prompt_tokens=3, max_response_tokens=5) == (row, False)
    cut, truncated = fit_row(row, max_prompt_tokens=3, max_response_tokens=4)
    assert truncated and cut.response == [4, 5] and cut.response_mask == [1, 1]


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
