"""A rollout's calls as the viewer lists them: side calls and branches marked by the batch
merge's own rule, retries and abandoned attempts folded apart, the conversation of the last turn."""

from __future__ import annotations

import re

from tests.components.trainer.conftest import _call as recorded_call

from components.viewer._rollout_html import rollout_body


def _roles(html: str) -> dict[str, str]:
    """call index -> role, per table: the listed calls, then the folded ones."""
    listed, _, folded = html.partition("<details id='folded'>")
    pattern = r"<tr><td>(\d+)</td><td>([^<]*)</td>"
    return dict(re.findall(pattern, listed)) | {f"folded {i}": role for i, role in re.findall(pattern, folded)}


def test_side_calls_branches_retries_and_abandoned_attempts_are_each_marked() -> None:
    second = {"attempt": 1}
    calls = [
        recorded_call(0, [1, 2], [3]),  # attempt 0, ended on an infrastructure failure
        recorded_call(0, [40, 41], [42], tags={**second, "side_call": "output_config.format without tools"}),
        recorded_call(1, [1, 2, 3], [4, 5], tags=second),
        recorded_call(2, [1, 2, 3, 4, 5, 6], [9], tags={**second, "superseded_by": 3}),  # the SDK retried it
        recorded_call(3, [1, 2, 3, 4, 5, 6], [7], tags={**second, "retry_of": 2}),
        recorded_call(4, [30, 31], [8], tags=second, request={"messages": [{"role": "user", "content": "again"}]}),
        recorded_call(5, [30, 31, 8, 9], [], tags=second, upstream_status=500),
    ]

    html = rollout_body("run", 0, "t-s0", calls, None)

    assert _roles(html) == {
        "0": "side call (output_config.format without tools)",
        "1": "row 0: starts",
        "3": "row 0",
        "4": "row 1: break",
        "5": "failed",
        "folded 0": "abandoned: attempt 0",
        "folded 2": "retried by call 3",
    }
    assert "2 call(s) folded" in html
    assert "Conversation (call 4, the last turn)" in html and ">again<" in html


def test_a_history_rewrite_names_the_call_it_grew_from() -> None:
    calls = [recorded_call(0, [1, 2, 3], [4]), recorded_call(1, [1, 2, 9], [5])]

    assert _roles(rollout_body("run", 0, "t-s0", calls, None)) == {"0": "row 0: starts", "1": "row 1: rewrite of call 0"}
