"""Branches in real harness sessions: a Claude Code subagent, recorded through the real proxy
and the scripted dev engine, becomes a row of its own (a branch) rather than a break, with
every sampled token trained exactly once. OpenClaw's rewritten history is checked on the
rollout tests/e2e/test_harnesses.py runs in it (the same two scripted turns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.core.config import AlgorithmConfig
from components.core.outcome import RewardRecord, RolloutStatus
from components.core.trajectory import RecordedCall
from components.trainer.batch import build_batch
from components.trainer.rows import merge_calls
from tests.e2e._branches import as_sampled, sampled_tokens
from tests.e2e._proxied_rollout import run_proxied_rollout
from tests.e2e.test_harnesses import ANSWER, SHELL_WRITE

SUBAGENT_PROMPT = "Report whether greeting.txt exists in the current directory."
# Claude Code's Agent tool (its Task tool before 2.1), run in the foreground so the parent
# waits for it. Explore is a subagent type without the Agent tool: the subagent's first
# turn (the script's turn 0 again: a request's turn is its count of assistant messages)
# is refused as an unknown tool instead of launching a subagent of its own.
AGENT_CALL = {
    "name": "Agent",
    "arguments": {
        "description": "Check the greeting",
        "prompt": SUBAGENT_PROMPT,
        "subagent_type": "Explore",
        "run_in_background": False,
    },
}
SCRIPT = {"turns": [{"tool_calls": [AGENT_CALL]}, {"tool_calls": [SHELL_WRITE]}, {"content": ANSWER}]}


def _run(make_dev_engine: Any, tmp_path: Path) -> list[RecordedCall]:
    settings = {"harness": {"max_turns": 8, "max_tokens": 256}, "rollout": {"time_limit_s": 300}}
    ran = run_proxied_rollout("claude-code", make_dev_engine(SCRIPT).url, tmp_path, "branches-e2e", settings)
    assert ran.outcome.status is RolloutStatus.OK, f"{ran.outcome.details}\n--- proxy ---\n{ran.proxy_log}"
    return as_sampled(ran.calls)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_claude_code_subagent_is_a_branch_trained_with_the_parents_advantage(make_dev_engine: Any, tmp_path: Path) -> None:
    calls = _run(make_dev_engine, tmp_path)
    launcher = next(c for c in calls if any(b.get("name") == "Agent" for b in c.response["content"]))

    rows, counts = merge_calls("write-greeting-s0", calls, temperature=1.0)

    assert (counts.branches["subagent"], counts.breaks) == (1, 0), counts
    assert [(r.branch_kind, r.parent_call) for r in rows] == [(None, None), ("subagent", launcher.call_index)]
    assert counts.continuations == len([c for c in calls if c.ok and not c.tags.get("side_call")]) - 2
    assert sum(r.sampled_tokens() for r in rows) == sampled_tokens(calls)
    # The same calls as a second rollout of the group, failed: the first's rows, branch
    # included, all carry its advantage, the second's the opposite one.
    records = [
        RewardRecord(rollout_id=rid, task_id="t", group_id="it0-t", reward=reward, usable=True, status=RolloutStatus.OK)
        for rid, reward in (("passed", 1.0), ("failed", 0.0))
    ]
    data, stats = build_batch({"passed": calls, "failed": calls}, records, AlgorithmConfig())
    advantage = {rid: [] for rid in ("passed", "failed")}
    for rid, row_advantage, mask in zip(data.non_tensor_batch["rollout_id"], data.batch["advantages"], data.batch["response_mask"]):
        advantage[rid].append(set(row_advantage[mask.bool()].tolist()))
    assert len(advantage["passed"]) == 2 and all(a == advantage["passed"][0] for a in advantage["passed"])
    [value] = advantage["passed"][0]
    assert value > 0 and advantage["failed"] == [{-value}, {-value}]
    assert stats.metrics()["batch/merge_branches/subagent"] == 2.0 and stats.trained_tokens == 2 * sampled_tokens(calls)

