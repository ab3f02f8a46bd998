"""Reading a scripted harness session's rows as if the policy had sampled them, and OpenClaw's
rewrite branches: shared by tests/e2e/test_harness_branches.py and test_harnesses.py."""

from __future__ import annotations

from components.core.trajectory import RecordedCall
from components.trainer.rows import merge_calls


def as_sampled(calls: list[RecordedCall]) -> list[RecordedCall]:
    """The calls with the engine's forced mark cleared, after checking the mark reached them.

    The scripted engine forces its turns and the records say so; training masks them
    (tests/components/trainer/test_rows.py). Where the rows go does not depend on that, so
    the turns are read as if the policy had sampled them."""
    assert any(c.forced_from == 0 for c in calls), "the engine's forced mark reached the records"
    return [c.model_copy(update={"forced_from": None}) for c in calls]


def sampled_tokens(calls: list[RecordedCall]) -> int:
    """Sampled tokens the records hold for training: the completions of the agent's answered calls."""
    return sum(len(c.completion_token_ids) for c in calls if c.ok and not c.tags.get("side_call"))


def assert_rewrites_become_branches(rollout_id: str, calls: list[RecordedCall]) -> None:
    """OpenClaw moves its internal-context message to the end of every request: no call extends
    the row before it, each is a rewrite of the call before, a row of its own (a branch, not a
    break), and no token is trained twice."""
    calls = as_sampled(calls)
    agent_calls = [c for c in calls if c.ok and not c.tags.get("side_call")]
    assert len(agent_calls) >= 2, [c.response for c in calls]

    rows, counts = merge_calls(rollout_id, calls, temperature=1.0)

    assert (counts.continuations, counts.breaks, counts.branches["rewrite"]) == (0, 0, len(agent_calls) - 1), counts
    assert [r.parent_call for r in rows[1:]] == [c.call_index for c in agent_calls[:-1]]
    assert sum(r.sampled_tokens() for r in rows) == sampled_tokens(calls)
    assert [r.prompt for r in rows] == [c.prompt_token_ids for c in agent_calls]
