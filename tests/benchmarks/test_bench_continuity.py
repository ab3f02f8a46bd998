"""The continuity benchmark's measurement and table, on hand-made recorded calls (no harness, no engine)."""

from __future__ import annotations

from benchmarks.bench_continuity import _real_row
from benchmarks.continuity.measure import Continuity
from components.core.trajectory import RecordedCall


def _call(index: int, prompt: list[int], completion: list[int], path: str = "tokens") -> RecordedCall:
    provenance = {"path": path} if path == "tokens" else {"path": "chat", "reason": "a first turn"}
    return RecordedCall(
        session_id="s", call_index=index, api="chat.completions", request={}, prompt_token_ids=prompt,
        completion_token_ids=completion, completion_logprobs=[-0.5] * len(completion),
        sampling={"temperature": 1.0}, started_at=0.0, latency_ms=1.0, upstream_status=200, provenance=provenance,
    )  # fmt: skip


def test_continued_calls_branches_and_sampled_tokens_are_counted_per_harness() -> None:
    calls = [
        _call(0, [1, 2, 3], [4, 5], path="chat"),
        _call(1, [1, 2, 3, 4, 5, 6], [7]),  # continues the row
        _call(2, [1, 2, 9, 4, 5, 6, 7, 8], [10, 11]),  # the harness rewrote its history: a rewrite branch
    ]
    off, on = Continuity("openclaw", provenance=False), Continuity("openclaw", provenance=True)
    off.add("s", calls[:1] + [_call(1, [1, 2, 3, 40, 6], [7], path="chat")], temperature=1.0)
    on.add("s", calls, temperature=1.0)

    assert (on.continued, dict(on.branches), on.breaks, on.share) == (1, {"rewrite": 1}, 0, 0.5)
    assert (on.sampled_in_rows, on.sampled_recorded, on.token_path) == (5, 5, 2)
    assert on.chat_reasons == {"a first turn": 1}
    row = _real_row(off, on, "plain", "ok 1 / ok 1")
    assert row.startswith("| openclaw | plain | 1 | 3 | 0% (0/1) | 50% (1/2) | rewrite 1 | 0 | 5 / 5 | 2 |")
