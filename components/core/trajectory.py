"""The trajectory record: one line of ``<session_id>.jsonl`` per recorded model call.

The proxy writes these records; scoring and training read them. The field meanings
and the versioning rule are documented in ``docs/trajectory-schema.md``; keep the two
in step (a test checks that every field here is documented there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from components.core.rollout_identity import TRAJECTORY_GLOB, trajectory_session
from components.core.validation import join_errors

# Bump the major part for changes a reader of the previous version would misread
# (renamed or re-typed fields); the minor part for added optional fields.
SCHEMA_VERSION = "1.5"
_SUPPORTED_MAJOR = "1"

Api = Literal["chat.completions", "completions", "responses", "anthropic.messages"]


class Sampling(BaseModel):
    """The sampling settings the upstream actually used for this call."""

    model_config = ConfigDict(extra="allow")

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None
    top_k: int | None = Field(None, description="As sent to the engine; -1 and 0 mean off (1.4).")
    min_p: float | None = Field(None, description="As sent to the engine (1.4).")
    repetition_penalty: float | None = Field(None, description="As sent to the engine (1.4).")
    presence_penalty: float | None = Field(None, description="As sent to the engine (1.4).")
    frequency_penalty: float | None = Field(None, description="As sent to the engine (1.4).")
    overridden: bool = Field(
        False, description="True when the proxy replaced the harness's settings (training mode)."
    )
    dropped: list[str] | None = Field(
        None, description="Training mode: the harness's own distribution settings that were replaced or removed."
    )
    applied: dict[str, Any] | None = Field(
        None,
        description="What the engine reports it sampled with, every distribution setting (the dev engine's "
        "x-openforge-sampling header; null from vLLM, whose defaults are pinned at launch) (1.4).",
    )


class Translation(BaseModel):
    """How a request in another API became the engine's chat request (schema 1.1)."""

    model_config = ConfigDict(extra="allow")

    upstream_request: dict[str, Any] = Field(description="The chat-completions body sent to the engine.")
    dropped: list[str] = Field(
        default_factory=list, description="Parts of the request the engine cannot take, removed (tools, images, ...)."
    )
    ignored: list[str] = Field(
        default_factory=list, description="Fields accepted but not acted on (thinking, cache_control, store, ...)."
    )
    mapped: list[str] = Field(
        default_factory=list, description="Parts rewritten into something the chat template accepts (roles, ...)."
    )
    previous_response: dict[str, Any] | None = Field(
        None,
        description="Responses with previous_response_id: the response continued (id, call_index) and how many "
        "input items the proxy put before the ones sent (items); upstream_request holds the whole conversation (1.3).",
    )


class Provenance(BaseModel):
    """Which way the call reached the engine with token provenance on (schema 1.2)."""

    model_config = ConfigDict(extra="allow")

    path: Literal["chat", "tokens"] = Field(
        description="tokens: the prompt was sent as token ids holding an earlier answer's sampled ids; chat: the chat endpoint."
    )
    reason: str | None = Field(None, description="Why the call took the chat path.")
    continues_call: int | None = Field(
        None, description="The call_index whose prompt and sampled completion the prompt starts with (tokens path)."
    )
    upstream_request: dict[str, Any] | None = Field(
        None, description="The /v1/completions body the engine was sent, without its prompt (= prompt_token_ids)."
    )
    context: str | None = Field(
        None, description="Digest of the conversation the answer was sampled in (1.4; a restarted proxy reads it back)."
    )
    answer: str | None = Field(
        None, description="Digest of the answer as a harness echoes it (1.4; a restarted proxy reads it back)."
    )


class RecordedCall(BaseModel):
    """One model call as the harness made it and as the policy answered it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    session_id: str
    call_index: int = Field(ge=0, description="0-based position of this call in its session file.")
    api: Api
    stream: bool = False
    model: str | None = Field(None, description="Model name sent upstream.")
    policy_version: str | None = Field(None, description="Checkpoint the upstream served.")
    request: dict[str, Any] = Field(description="Request body as the harness sent it.")
    response: dict[str, Any] | None = Field(
        None, description="Response body as returned to the harness (reassembled when streamed)."
    )
    prompt_token_ids: list[int] = Field(default_factory=list)
    completion_token_ids: list[int] = Field(default_factory=list)
    completion_logprobs: list[float] = Field(default_factory=list)
    finish_reason: str | None = None
    forced_from: int | None = Field(
        None,
        ge=0,
        description="The completion's tokens from this index on were forced by the engine, not sampled (choice "
        "mode's one-candidate turns, scripted turns): recorded, never trained on (1.5). Null: all sampled.",
    )
    choice: str | None = Field(
        None,
        description="Choice mode's mark (1.5): drawn (the policy drew among candidates), forced (the turn's one "
        "candidate), miss (no candidate of the book matched; sampled freely). Null outside choice mode.",
    )
    text_only: bool = Field(
        False,
        description="A teacher's call recorded as text (proxy --teacher, 1.5): no token ids, never trained on by "
        "RL; SFT tokenizes it with the student's chat template.",
    )
    sampling: Sampling = Field(default_factory=Sampling)
    tags: dict[str, Any] = Field(default_factory=dict)
    request_digest: str | None = Field(None, description="sha256 of the canonical request body.")
    started_at: float = Field(description="Unix time (seconds) when the proxy received the call.")
    latency_ms: float = Field(ge=0)
    upstream_status: int = Field(description="HTTP status of the upstream (0 if it was unreachable).")
    error: str | None = Field(None, description="What went wrong, when the call did not succeed.")
    translation: Translation | None = Field(
        None, description="For APIs other than chat completions: what the engine was sent instead (1.1)."
    )
    provenance: Provenance | None = Field(
        None, description="With token provenance on: token path or chat path, and why (1.2); null when it is off."
    )
    images: list[str] = Field(
        default_factory=list,
        description="JSON pointers (into this record) of the image references that replaced base64 images (1.3).",
    )

    @model_validator(mode="after")
    def _check_consistency(self) -> "RecordedCall":
        major = self.schema_version.split(".", 1)[0]
        if major != _SUPPORTED_MAJOR:
            raise ValueError(
                f"schema_version {self.schema_version!r} is not readable by this OpenForge "
                f"(reads {_SUPPORTED_MAJOR}.x); upgrade OpenForge or re-record"
            )
        if self.completion_logprobs and len(self.completion_logprobs) != len(self.completion_token_ids):
            raise ValueError(
                f"completion_logprobs has {len(self.completion_logprobs)} entries but "
                f"completion_token_ids has {len(self.completion_token_ids)}; they must match one to one"
            )
        return self

    def sampled_mask(self) -> list[int]:
        """1 for each completion token the policy sampled, 0 for each the engine forced."""
        cut = len(self.completion_token_ids) if self.forced_from is None else min(self.forced_from, len(self.completion_token_ids))
        return [1] * cut + [0] * (len(self.completion_token_ids) - cut)

    @property
    def ok(self) -> bool:
        """A call that succeeded upstream and carries the tokens training needs."""
        return self.upstream_status == 200 and self.error is None and bool(self.completion_token_ids)


class TrajectoryError(ValueError):
    """A recorded file that does not hold valid records; the message names file and line."""


def _parse_line(path: Path, lineno: int, raw: bytes) -> RecordedCall:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TrajectoryError(f"{path}:{lineno}: not valid JSON ({exc})") from None
    try:
        return RecordedCall.model_validate(_known_fields(data))
    except ValidationError as exc:
        problems = join_errors(exc)
        raise TrajectoryError(f"{path}:{lineno}: invalid record ({problems})") from None


def _known_fields(data: Any) -> Any:
    """A record of a newer minor version without the fields this reader does not know.

    Minor versions only add optional fields, so dropping them loses nothing this reader
    can use; within known versions unknown fields are still refused (they are typos).
    """
    if not isinstance(data, dict) or not _newer_minor(data.get("schema_version")):
        return data
    return {key: value for key, value in data.items() if key in RecordedCall.model_fields}


def _newer_minor(version: Any) -> bool:
    if not isinstance(version, str):
        return False
    major, _, minor = version.partition(".")
    ours = SCHEMA_VERSION.split(".")
    return major == ours[0] and minor.isdigit() and int(minor) > int(ours[1])


def read_session(path: str | Path) -> list[RecordedCall]:
    """Read and validate one session file; raise TrajectoryError naming the bad line.

    A file whose last line lacks its newline was cut short by a crash mid-write; that
    line was never a completed call, so it is reported rather than silently dropped.
    """
    path = Path(path)
    calls: list[RecordedCall] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                raise TrajectoryError(f"{path}:{lineno}: truncated last line (the writer stopped mid-record)")
            if raw.strip():
                calls.append(_parse_line(path, lineno, raw))
    for expected, call in enumerate(calls):
        if call.call_index != expected:
            raise TrajectoryError(
                f"{path}: call_index {call.call_index} at position {expected}; calls are out of order"
            )
    return calls


def read_sessions(directory: str | Path) -> Iterator[tuple[str, list[RecordedCall]]]:
    """Yield ``(session_id, calls)`` for every trajectory file in a directory, sorted by name."""
    for path in sorted(Path(directory).glob(TRAJECTORY_GLOB)):
        yield trajectory_session(path.name), read_session(path)


def attempt_of(call: RecordedCall) -> int:
    """The runner's attempt a call belongs to: ``tags["attempt"]``, absent for the first (0)."""
    value = call.tags.get("attempt", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def model_tokens(calls: Sequence[RecordedCall]) -> dict[str, int]:
    """The tokens the model billed for these calls, by the usage each answer reports
    (chat: prompt/completion_tokens; Messages and Responses: input/output_tokens): what a
    teacher session cost. Calls whose answer reports no usage count nothing."""
    totals = {"prompt": 0, "completion": 0}
    for call in calls:
        usage = (call.response or {}).get("usage")
        if not isinstance(usage, dict):
            continue
        for name, keys in (("prompt", ("prompt_tokens", "input_tokens")), ("completion", ("completion_tokens", "output_tokens"))):
            value = next((usage[k] for k in keys if isinstance(usage.get(k), int)), 0)
            totals[name] += value
    return totals


def latest_attempt(calls: Sequence[RecordedCall], attempt: int | None = None) -> list[RecordedCall]:
    """The calls of one attempt of a rollout: ``attempt``, else the latest one recorded.

    A rollout retried after an infrastructure failure keeps every attempt's calls in its
    session file (nothing recorded is lost), but only the attempt whose outcome was
    judged may be scored and trained on: the earlier ones ended because the engine or
    proxy failed, not because of the policy.
    """
    if not calls:
        return []
    chosen = max(attempt_of(call) for call in calls) if attempt is None else attempt
    return [call for call in calls if attempt_of(call) == chosen]


def chat_request(call: RecordedCall) -> dict[str, Any]:
    """The chat-completions request the engine was sent: the translation's for the other APIs.

    One form for every recorded API: the conversation so far (tool calls as the assistant's
    ``tool_calls``, tool results as ``tool`` messages) and the declared ``tools``.
    """
    return (call.translation.upstream_request if call.translation is not None else None) or call.request
