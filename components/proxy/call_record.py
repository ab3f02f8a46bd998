"""One call's record: what is known before the upstream answers, and the record line built from it.

Kept apart from ``calls.py`` (the pipeline) so the record's shape lives in one place,
in ``RecordedCall``'s field order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import orjson

from components.core.choices import CHOICE_HEADER, CHOICE_MARKS, FORCED_FROM_HEADER
from components.core.sampling import APPLIED_SAMPLING_HEADER, sampling_mismatch
from components.core.trajectory import SCHEMA_VERSION
from components.proxy.call_tags import Attempt
from components.proxy.provenance import Route
from components.proxy.upstream import REPLICA_TAG
from components.proxy.upstream_chat import Completion


@dataclass
class Call:
    """What is known about a call before the upstream answers."""

    session_id: str
    api: str
    stream: bool
    model: str | None
    request: dict[str, Any]
    sampling: dict[str, Any]
    started_at: float
    t0: float
    digest: str
    attempt: Attempt  # side-call and retry tags
    translation: dict[str, Any] | None  # what the engine got instead of a non-chat request
    route: Route | None  # token provenance's choice of path (None: provenance off)
    record_request: dict[str, Any]  # ``request`` with image references in place of base64 images
    images: list[str]  # JSON pointers of those references in the record
    # Called with (response, call_index) once a successful call is on disk (Responses conversations).
    on_recorded: Callable[[dict[str, Any] | None, int], None] | None = None
    text_only: bool = False  # a teacher's call (proxy --teacher): recorded without token ids
    upstream_attempts: int = 1  # sends of the request; more than one when the upstream was unreachable
    upstream_replica: int | None = None  # the engine replica the last send went to (engine replicas only)
    applied_sampling: dict[str, Any] | None = None  # what the engine says it sampled with (dev engine only)
    sampling_problem: str | None = None  # the engine sampled otherwise than ``sampling`` says
    choice: str | None = None  # choice mode's mark (components/core/choices.py); None from vLLM
    forced_from: int | None = None  # completion tokens from here on were forced, not sampled

    def engine_answered(self, headers: Mapping[str, str]) -> None:
        """Take the engine's report of how it answered from its answer's headers: the
        sampling it applied, and what it forced or chose (the dev engine only)."""
        self._take_sampling(headers)
        self._take_marks(headers)

    def _take_sampling(self, headers: Mapping[str, str]) -> None:
        raw = headers.get(APPLIED_SAMPLING_HEADER)
        if raw is None:
            return  # vLLM: its defaults are pinned at launch (--generation-config vllm)
        try:
            applied = orjson.loads(raw)
        except orjson.JSONDecodeError:
            applied = None
        if not isinstance(applied, dict):
            self.sampling_problem = f"the engine's {APPLIED_SAMPLING_HEADER} header is not a JSON object: {raw[:200]!r}"
            return
        self.applied_sampling = applied
        self.sampling_problem = sampling_mismatch(self.sampling, applied)

    def _take_marks(self, headers: Mapping[str, str]) -> None:
        choice, forced = headers.get(CHOICE_HEADER), headers.get(FORCED_FROM_HEADER)
        if choice is not None:
            # An unknown mark is kept as the engine wrote it and flagged: the record must not
            # pass a turn off as sampled when the engine said otherwise.
            self.choice = choice
            if choice not in CHOICE_MARKS:
                self.sampling_problem = self.sampling_problem or f"the engine's {CHOICE_HEADER} header is {choice[:50]!r}, not one of {CHOICE_MARKS}"
        if forced is not None:
            if forced.isdigit():
                self.forced_from = int(forced)
            else:
                self.forced_from = 0  # forced, from where unknown: train on none of it
                self.sampling_problem = self.sampling_problem or f"the engine's {FORCED_FROM_HEADER} header is not a token index: {forced[:50]!r}"

    def record(
        self,
        *,
        policy_version: str | None,
        response: dict[str, Any] | None,
        completion: Completion,
        upstream_status: int,
        error: str | None,
    ) -> dict[str, Any]:
        # Built by hand in RecordedCall's field order: validating with pydantic on the hot
        # path would cost more than the whole proxy hop (the tests validate what is written).
        return {
            "schema_version": SCHEMA_VERSION,
            "session_id": self.session_id,
            "call_index": None,  # the recorder numbers calls in append order
            "api": self.api,
            "stream": self.stream,
            "model": self.model,
            "policy_version": policy_version,
            "request": self.record_request,
            "response": response,
            "prompt_token_ids": completion.prompt_token_ids,
            "completion_token_ids": completion.completion_token_ids,
            "completion_logprobs": completion.completion_logprobs,
            "finish_reason": completion.finish_reason,
            "forced_from": self.forced_from,
            "choice": self.choice,
            "text_only": self.text_only,
            "sampling": self.sampling if self.applied_sampling is None else {**self.sampling, "applied": self.applied_sampling},
            "tags": self._tags(),
            "request_digest": self.digest,
            "started_at": self.started_at,
            "latency_ms": (time.perf_counter() - self.t0) * 1000.0,
            "upstream_status": upstream_status,
            "error": error,
            "translation": self.translation,
            "provenance": None if self.route is None else self.route.record(),
            "images": self.images,
        }

    def _tags(self) -> dict[str, Any]:
        tags = self.attempt.tags()
        if self.upstream_attempts > 1:
            tags["upstream_attempts"] = self.upstream_attempts
        if self.upstream_replica is not None:
            tags[REPLICA_TAG] = self.upstream_replica
        return tags
