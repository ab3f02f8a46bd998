"""Real harnesses on real vLLM (its CPU build): Claude Code and Codex, at their pinned
versions, run a rollout through the recording proxy in training mode to the session's
vLLM (``vllm_engine``, tests/conftest.py), sampling freely from the random tiny model.

Every answered call must carry vLLM's own token ids and logprobs and the policy version
it serves, and the trainer's merge must find no break: each call after the first extends
the row before it. Claude Code asks again when an answer stops at ``max_tokens``, so its
follow-up calls must take the token path (prompt ids spliced from the ids vLLM sampled,
sent to ``/v1/completions``). Codex ends its turn on the first text answer, so a random
model gives it one call and nothing to continue: a multi-turn Codex figure on vLLM needs a
policy that calls tools (docs/proxy.md, "Real harnesses on real vLLM").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import VLLM_POLICY_VERSION
from tests.e2e._proxied_rollout import ROLLOUT_ID, run_proxied_rollout

from components.core.outcome import RolloutStatus
from components.trainer.rows import merge_calls

# A harness's own failure (Claude Code exits 1 after its fourth answer cut at max_tokens)
# is the random policy's doing; the records must be whole either way.
ENDINGS = {RolloutStatus.OK, RolloutStatus.HARNESS_ERROR}


@pytest.mark.slow
@pytest.mark.timeout(900)  # vLLM's start (shared, ~1-2 min) and ~16k-token prompts prefilled on CPU
@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_a_real_harness_on_real_vllm_records_vllms_tokens_and_continues_its_row(
    harness: str, vllm_engine: Any, tmp_path: Path
) -> None:
    # 128 tokens, as examples/claude-code.yaml: short answers, cut often.
    settings = {"harness": {"max_turns": 6, "max_tokens": 128}, "rollout": {"time_limit_s": 600}}
    ran = run_proxied_rollout(harness, vllm_engine.url, tmp_path, "vllm-harness-e2e", settings)
    agent = [c for c in ran.calls if c.ok and not c.tags.get("side_call")]

    assert ran.outcome.status in ENDINGS and agent, f"{ran.outcome.status}: {ran.outcome.details}\n--- proxy ---\n{ran.proxy_log}"
    for call in agent:
        assert call.policy_version == VLLM_POLICY_VERSION
        assert len(call.completion_token_ids) == len(call.completion_logprobs) > 0
        assert all(logprob <= 0 for logprob in call.completion_logprobs)
        assert len(call.prompt_token_ids) > 1000  # the harness's whole system prompt and tools, as vLLM saw them
    rows, counts = merge_calls(ROLLOUT_ID, ran.calls, temperature=1.0)
    assert (counts.breaks, counts.continuations, len(rows)) == (0, len(agent) - 1, 1), counts
    assert [c.provenance.path for c in agent[1:]] == ["tokens"] * (len(agent) - 1)
    if harness == "claude-code":
        assert len(agent) >= 2, [c.response for c in agent]  # it asks again after a cut answer
    print(f"\n{harness} on vLLM: {len(agent)} calls, prompts up to {max(len(c.prompt_token_ids) for c in agent)} tokens")
