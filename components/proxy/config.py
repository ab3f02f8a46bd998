"""The proxy's settings, validated once at the edge (CLI or caller)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ProxyConfig(BaseModel):
    """Everything one recording proxy needs; every field is a CLI option of ``openforge proxy``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    upstream: str = Field(
        description="Base URL of the OpenAI-compatible engine (vLLM or the dev engine), "
        "with or without a trailing /v1."
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
    token_provenance: bool | None = Field(
        None,
        description="Send a call whose history ends with an answer this proxy returned to the engine as token "
        "ids, that answer's sampled ids in place of its re-rendered text, so training rows never break on "
        "re-tokenisation (docs/proxy.md#token-provenance). Unset: on in training mode, off otherwise.",
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
        64.0, gt=0, description="Largest request body accepted; long agent histories exceed a few MB."
    )

    @property
    def provenance_on(self) -> bool:
        return self.training if self.token_provenance is None else self.token_provenance

    @field_validator("upstream")
    @classmethod
    def _normalise_upstream(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream {value!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000)")
        # Accept both ".../v1" and the bare base URL: the proxy appends the API paths itself.
        return value[: -len("/v1")] if value.endswith("/v1") else value

    @field_validator("served_model")
    @classmethod
    def _non_empty_model(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("served_model must not be empty; omit it to use the upstream's first model")
        return value
