"""Outcomes and recorded calls for the scoring tests."""

from __future__ import annotations

from typing import Callable

import pytest

from components.core.outcome import Outcome, RolloutStatus
from components.core.trajectory import RecordedCall


def _outcome(rollout_id: str, status: str = "ok", reward: float | None = None, passed: bool | None = None, **fields) -> Outcome:
    task_id, _, sample = rollout_id.rpartition("-s")
    if status == "ok" and reward is None:
        reward = 1.0 if passed else 0.0
    return Outcome(
        rollout_id=rollout_id,
        task_id=task_id,
        sample_index=int(sample),
        iteration=0,
        status=RolloutStatus(status),
        reward=reward,
        passed=passed if status == "ok" else None,
        **fields,
    )


def _call(index: int = 0, session: str = "t-s0", completion: tuple[int, ...] = (4, 5), **fields) -> RecordedCall:
    base = dict(
        session_id=session,
        call_index=index,
        api="chat.completions",
        request={},
        prompt_token_ids=[1, 2, 3],
        completion_token_ids=list(completion),
        completion_logprobs=[-0.5] * len(completion),
        sampling={"temperature": 1.0},
        started_at=0.0,
        latency_ms=1.0,
        upstream_status=200,
    )
    return RecordedCall(**{**base, **fields})


@pytest.fixture
def outcome() -> Callable[..., Outcome]:
    return _outcome


@pytest.fixture
def call() -> Callable[..., RecordedCall]:
    return _call
