"""The proxy's settings, validated once at the edge (CLI or caller)."""

from __future__ import annotations

from pathlib import Path

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretBytes, SecretStr, field_validator, model_validator

from components.core.parsers import ChatParsers, ReasoningParserName, ToolCallParserName


class ProxyConfig(BaseModel):
    """Everything one recording proxy needs; every field is a CLI option of ``openforge proxy``."""

    # Inputs stay out of validation errors: one of them may be the session secret.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    upstream: str = Field(
        description="Base URL of the OpenAI-compatible engine (vLLM or the dev engine), "
        "with or without a trailing /v1. Engine replicas: several, comma-separated "
        "(http://a:8000,http://b:8000; one without a scheme takes the first's): each session is "
        "pinned to one, and a call a replica never received fails over to the next."
    )
    out: Path = Field(description="Directory that receives one <session_id>.jsonl per session.")
    host: str = Field("127.0.0.1", description="Interface to listen on.")
    port: int = Field(8100, ge=0, le=65535, description="Port to listen on (0 picks a free one).")
    served_model: str | None = Field(
        None,
        description="Model name sent upstream in place of the harness's; when unset the first "
        "model the upstream lists is used.",
    )
    training: bool = Field(
        False, description="Override sampling to temperature 1, top_p 1 (the policy's own distribution)."
    )
    training_temperature: float = Field(
        1.0,
        gt=0,
        description="With training: the temperature every call samples at (algorithm.temperature); the other knobs "
        "stay neutral. The engine's logprobs are those of the distribution sampled from, which the trainer "
        "recomputes at the same temperature.",
    )
    teacher: bool = Field(
        False,
        description="Record a teacher for SFT: the upstream is any OpenAI-compatible chat endpoint (its key from "
        "$OPENFORGE_UPSTREAM_API_KEY) that need not return token ids. Engine-only fields are not sent, the "
        "teacher samples as it was asked, and calls are recorded as text (`text_only`), tokenized with the "
        "student's chat template when SFT reads them (docs/proxy.md#recording-a-teacher).",
    )
    teacher_api: Literal["chat", "messages"] = Field(
        "chat",
        description="With teacher: the API the teacher speaks. chat: any OpenAI-compatible chat endpoint; "
        "messages: an Anthropic Messages endpoint, to which a Messages-speaking harness's calls pass through as "
        "sent (its key as x-api-key), the teacher's Message returned as it came (docs/proxy.md#recording-a-teacher).",
    )
    sampling_seed: str | None = Field(
        None,
        min_length=1,
        description="In training mode, give each call that carries no seed of its own a seed derived from this "
        "label (the workflow passes `<experiment seed>/<iteration>`), its session, its attempt and its turn, so a "
        "rerun draws the same samples for the same prompts (vLLM and the dev engine honour per-request seeds). "
        "Unset: the engine draws at random.",
    )
    token_provenance: bool | None = Field(
        None,
        description="Send a call whose history ends with an answer this proxy returned to the engine as token "
        "ids, that answer's sampled ids in place of its re-rendered text, so training rows never break on "
        "re-tokenisation (docs/proxy.md#token-provenance). Unset: on in training mode, off otherwise.",
    )
    tool_call_parser: ToolCallParserName | None = Field(
        "hermes",
        description="Tool-call format the token path reads answers with, by vLLM's parser name; the same as the "
        "engine's (engine.vllm.tool_call_parser), so both paths give one answer. None: no tool parsing.",
    )
    reasoning_parser: ReasoningParserName | None = Field(
        None, description="Reasoning format the token path reads answers with (engine.vllm.reasoning_parser)."
    )
    fsync: bool = Field(
        False,
        description="fsync each record before answering. Off by default: a record written to the "
        "page cache already survives the proxy being killed; fsync adds machine-crash safety.",
    )
    upstream_timeout_s: float = Field(
        600.0, gt=0, description="Longest wait for the upstream's next bytes before answering 504."
    )
    upstream_connect_timeout_s: float = Field(10.0, gt=0, description="Longest wait to open a connection.")
    upstream_socket: str | None = Field(
        None,
        description="Reach the upstream through this Unix socket instead of its address (a sandboxed "
        "pod's one channel to the engine, docs/executor.md); the upstream URL still names the origin. "
        "Engine replicas: one socket per replica, comma-separated, in the upstream's order.",
    )
    upstream_connections: int = Field(
        1024, ge=1, description="Size of the pooled connection set to the upstream (one per call in flight)."
    )
    max_open_files: int = Field(
        256, ge=1, description="Session files kept open at once; the least recently used is closed first."
    )
    policy_refresh_s: float = Field(
        5.0, gt=0, description="How often, at most, the upstream's model list (policy version) is re-read."
    )
    max_request_mb: float = Field(
        64.0,
        gt=0,
        description="Largest request body accepted; long agent histories exceed a few MB, and GUI agents "
        "send 10+ screenshots of hundreds of KB each (20-50 MB bodies fit the default).",
    )
    responses_store_mb: float = Field(
        256.0,
        gt=0,
        description="Memory for the Responses conversations kept for previous_response_id; the least recently "
        "used are forgotten first (a call naming one then gets a 400).",
    )
    max_in_flight: int = Field(
        256, ge=1, description="Calls served at once; one more is answered 429 with Retry-After, never queued."
    )
    retry_after_s: int = Field(1, ge=0, description="Retry-After (seconds) sent with the proxy's own 429s.")
    upstream_retries: int = Field(
        3,
        ge=0,
        description="Extra attempts, with backoff, for a request the upstream never received "
        "(connection refused, connect timeout, pooled connection closed); never once it answered.",
    )
    max_session_mb: float = Field(
        512.0, gt=0, description="A session file larger than this takes no more calls (413); what it holds is kept."
    )
    session_secret: SecretBytes | None = Field(
        None,
        description="When set, each session's calls must carry session_token(secret, session_id) as their API key.",
    )
    upstream_api_key: SecretStr | None = Field(
        None, description="Sent upstream as a Bearer token (vLLM started with --api-key); never returned or recorded."
    )

    @property
    def parsers(self) -> ChatParsers:
        return ChatParsers(self.tool_call_parser, self.reasoning_parser)

    @property
    def provenance_on(self) -> bool:
        return self.training if self.token_provenance is None else self.token_provenance

    @model_validator(mode="after")
    def _teacher_is_not_the_policy(self) -> "ProxyConfig":
        # A teacher's samples are off-policy and come without token ids: nothing of training
        # mode (the policy's distribution, its sampled ids spliced back) can apply to them.
        if self.teacher and (self.training or self.token_provenance):
            raise ValueError("a teacher is recorded as it samples and as text: leave out --training and --token-provenance")
        if self.training_temperature != 1.0 and not self.training:
            raise ValueError("--temperature sets the training temperature: add --training, or leave it out")
        if self.teacher_api != "chat" and not self.teacher:
            raise ValueError("--teacher-api names a teacher's API: add --teacher, or leave it out")
        return self

    @field_validator("upstream")
    @classmethod
    def _normalise_upstream(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream {value!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000)")
        scheme = value.split("://", 1)[0]
        replicas = []
        for part in value.split(","):
            part = part.strip().rstrip("/")
            if "://" not in part:  # a replica's bare host:port, as the manifest lists them
                part = f"{scheme}://{part}"
            if not part.startswith(("http://", "https://")) or part.endswith("://"):
                raise ValueError(f"upstream replica {part!r} in {value!r} is not an http:// or https:// address")
            # Accept both ".../v1" and the bare base URL: the proxy appends the API paths itself.
            replicas.append(part[: -len("/v1")] if part.endswith("/v1") else part)
        return ",".join(replicas)

    @property
    def upstreams(self) -> tuple[str, ...]:
        """The engine replicas' base URLs (one without replicas)."""
        return tuple(self.upstream.split(","))

    @property
    def upstream_sockets(self) -> tuple[Path | None, ...]:
        """Each replica's Unix socket, in the replicas' order (None: reach it by its address)."""
        if self.upstream_socket is None:
            return (None,) * len(self.upstreams)
        return tuple(Path(p.strip()) for p in self.upstream_socket.split(","))

    @model_validator(mode="after")
    def _one_socket_per_replica(self) -> "ProxyConfig":
        if len(self.upstream_sockets) != len(self.upstreams):
            raise ValueError(
                f"{len(self.upstream_sockets)} upstream socket(s) for {len(self.upstreams)} upstream replica(s); "
                "give one socket per replica, in the same order"
            )
        return self

    @field_validator("session_secret")
    @classmethod
    def _long_secret(cls, value: SecretBytes | None) -> SecretBytes | None:
        # A short secret makes every session token guessable; the message never echoes it.
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("session secret must be at least 16 bytes; generate one with `openssl rand -hex 32`")
        return value

    @field_validator("served_model")
    @classmethod
    def _non_empty_model(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("served_model must not be empty; omit it to use the upstream's first model")
        return value
