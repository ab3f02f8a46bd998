"""Who failed a harness run: the engine's context refusals as vLLM and the dev engine word them."""

from __future__ import annotations

import pytest

from components.core.outcome import RolloutStatus
from components.core.trajectory import RecordedCall
from components.rollout._failures import blame, is_context_refusal

REFUSALS = [
    # vLLM's serving layer, old and new wording, and the dev engine (same words)
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "This model's maximum context length is 2048 tokens. However, your request has 2100 input tokens. "
    "Please reduce the length of the input messages.",
    "'max_tokens' or 'max_completion_tokens' is too large: 64. This model's maximum context length is 512 "
    "tokens and your request has 500 input tokens (64 > 512 - 500).",
    # vLLM V1's engine-side input check
    "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
    "`max_model_len` is no smaller than the number of text tokens.",
    "Error code: context_length_exceeded",
]
NOT_REFUSALS = ["tools[0].function.name is required", "invalid 'messages': context must be a list", ""]


def _call(index: int, status: int, error: str | None) -> RecordedCall:
    return RecordedCall(
        session_id="s", call_index=index, api="chat.completions", request={}, started_at=0.0, latency_ms=0.0,
        upstream_status=status, error=error,
    )  # fmt: skip


@pytest.mark.parametrize("message", REFUSALS)
def test_context_refusals_are_recognised(message: str) -> None:
    assert is_context_refusal(_call(0, 400, f"upstream http://127.0.0.1:8000/v1 answered 400: {message}"))


@pytest.mark.parametrize("message", NOT_REFUSALS)
def test_other_client_errors_are_not(message: str) -> None:
    assert not is_context_refusal(_call(0, 400, message))


def test_context_words_in_a_5xx_are_infrastructure() -> None:
    assert not is_context_refusal(_call(0, 500, REFUSALS[0]))
    assert blame([_call(0, 500, REFUSALS[0])])[0] is RolloutStatus.INFRA_ERROR


def test_engine_that_failed_and_recovered_is_not_blamed() -> None:
    calls = [_call(0, 502, "bad gateway"), _call(1, 200, None)]
    assert blame(calls) is None


def test_last_failing_call_decides_context_overflow() -> None:
    calls = [_call(0, 200, None), _call(1, 400, REFUSALS[1]), _call(2, 200, None)]
    status, note = blame(calls)
    assert status is RolloutStatus.CONTEXT_OVERFLOW and "call 1" in note
    assert blame([_call(0, 400, REFUSALS[1]), _call(1, 400, "bad tool")]) is None
