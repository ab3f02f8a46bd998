"""What a failed harness run says about who failed: the engine, the context, or the agent.

The runner only sees a harness exit code or a timeout; the recorded calls of the attempt
say why. A harness that stopped right after the engine failed (unreachable, or HTTP 5xx)
was failed by the infrastructure: the runner retries it, and training must not learn
from it. A harness that stopped after the engine refused a call for context length ran
out of context: that is the policy's doing (its own outputs and the tool output it asked
for grew the prompt), graded like a timeout. See docs/reliability.md, "Failure taxonomy".
"""

from __future__ import annotations

import json
import math
import re
from typing import Sequence

from components.core.outcome import RolloutStatus
from components.core.trajectory import RecordedCall
from components.rollout._process import tail

_PYTHON_CRASH = "Traceback (most recent call last)"

# The engines' 400 answers to a prompt that does not fit (the proxy passes their message
# through in the record's ``error``): vLLM's serving layer ("This model's maximum context
# length is N tokens. However, you requested / your request has M ... tokens"), its
# max_tokens check ("'max_tokens' or 'max_completion_tokens' is too large: ..."), its V1
# engine's input check ("The decoder prompt (length N) is longer than the maximum model
# length of M"), OpenAI's ``context_length_exceeded`` code, and the dev engine, which
# words its refusals as vLLM's serving layer does (components/engine/_routes.py).
_CONTEXT_LENGTH = re.compile(
    r"maximum context length"
    r"|context[_ ]length[_ ]exceeded"
    r"|'?max_tokens'? or '?max_completion_tokens'? is too large"
    r"|(?:prompt|input)\b[^.]{0,80}\b(?:is )?longer than the maximum model length"
    r"|exceeds? (?:the )?(?:model'?s? )?max(?:imum)?[_ ]model[_ ]len",
    re.IGNORECASE,
)


def is_context_refusal(call: RecordedCall) -> bool:
    """The engine refused this call because prompt plus completion would not fit its context."""
    return call.upstream_status == 400 and bool(call.error) and _CONTEXT_LENGTH.search(call.error) is not None


def failed_upstream(call: RecordedCall) -> bool:
    """The engine could not be reached (status 0) or failed on its side (5xx)."""
    return call.upstream_status == 0 or call.upstream_status >= 500


def blame(calls: Sequence[RecordedCall]) -> tuple[RolloutStatus, str] | None:
    """The status a harness that failed or timed out really earned, from one attempt's calls.

    None keeps the runner's own verdict (harness error or timeout). The infrastructure is
    blamed only when the attempt's *last* call failed upstream: an engine that failed and
    recovered, after which the harness went on and crashed, did not make it crash.
    """
    if not calls:
        return None
    last = calls[-1]
    if failed_upstream(last):
        count = sum(failed_upstream(call) for call in calls)
        return RolloutStatus.INFRA_ERROR, (
            f"{count} model call(s) failed upstream (last: HTTP {last.upstream_status}: {last.error})"
        )
    failing = [call for call in calls if call.upstream_status != 200 or call.error is not None]
    if failing and is_context_refusal(failing[-1]):
        call = failing[-1]
        return RolloutStatus.CONTEXT_OVERFLOW, (
            f"the engine refused call {call.call_index} for context length ({tail(call.error or '', 300)})"
        )
    return None


def verdict(exit_code: int | None, stdout: str, stderr: str = "") -> tuple[bool, float]:
    """``(passed, reward)`` from a verifier's exit code and output; ValueError when it makes no sense."""
    if exit_code not in (0, 1):
        raise ValueError(f"verifier exited with code {exit_code}; it must exit 0 (passed) or 1 (failed)")
    if exit_code == 1 and _PYTHON_CRASH in stderr:
        # Python exits 1 on an uncaught exception: that is a broken verifier, not a failed rollout.
        raise ValueError(f"verifier crashed: {tail(stderr, 500)}")
    passed = exit_code == 0
    lines = stdout.strip().splitlines()
    last = lines[-1].strip() if lines else ""
    if not last.startswith("{"):
        return passed, 1.0 if passed else 0.0
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        return passed, 1.0 if passed else 0.0  # a brace-led line of plain output, not a verdict
    if not isinstance(data, dict) or "reward" not in data:
        return passed, 1.0 if passed else 0.0
    reward = data["reward"]
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise ValueError(f"verifier printed reward {reward!r}; it must be a finite number")
    return passed, float(reward)
