"""The ``teacher:`` section of an experiment config: who answers when `openforge record` runs.

Its own module, as ``sft:`` has: only the recording reads it. Two kinds of teacher:

- ``reference``: the dev engine plays each task's ``reference`` turns (task.yaml), erring on a
  turn with probability ``error_rate`` by playing one of that turn's other candidate turns
  (``choices``), so the recordings hold failures too. It serves the student's own model, so
  every record carries the student's token ids.
- ``endpoint``: any OpenAI-compatible chat endpoint (a hosted model, an engine served beside
  the run) reached by the rollouts' proxy sidecars alone; recorded as text and tokenized
  with the student's chat template when SFT reads it (docs/proxy.md, "Recording a teacher").
- ``checkpoint``: another model (a folder or an S3 prefix), which the recording's own serve
  step serves with the config's engine; the proxies record it as text, as an endpoint's, so
  its tokenizer need not be the student's.

The endpoint's key is never in the config: locally it is read from the environment variable
``api_key_env`` names; on a cluster from the Kubernetes Secret ``secret``, under the key of
that same name. Only the proxy sidecar is given it (docs/trainer.md, "Recording a teacher").
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# What an environment variable's name and a Secret's key both accept: the key is the
# variable's name, so one name works in both places.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The sandbox passes every OPENFORGE_* variable of the host to every container of a pod
# (pipelines/executor/_isolation.py): a key under such a name would reach the harness.
_PASSED_TO_EVERY_CONTAINER = "OPENFORGE_"
# What only an endpoint teacher has: where it is, its key, its prices.
_ENDPOINT_FIELDS = ("url", "model", "api_key_env", "egress_cidrs", "usd_per_million_tokens")


class TeacherPrices(BaseModel):
    """What the teacher's provider charges, in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    prompt: float = Field(ge=0, description="Per million prompt (input) tokens.")
    completion: float = Field(ge=0, description="Per million completion (output) tokens.")

    def cost(self, tokens: Mapping[str, int]) -> float:
        """Dollars for ``tokens`` ({"prompt": n, "completion": m}, trajectory.model_tokens' shape)."""
        return (tokens.get("prompt", 0) * self.prompt + tokens.get("completion", 0) * self.completion) / 1e6


class TeacherConfig(BaseModel):
    """The teacher `openforge record` records through the real harness (docs/trainer.md)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["reference", "endpoint", "checkpoint"] = Field(
        description="`reference`: the dev engine plays the tasks' reference turns; `endpoint`: an "
        "OpenAI-compatible chat endpoint answers; `checkpoint`: the recording's serve step serves `path`."
    )
    path: str | None = Field(
        None,
        description="kind checkpoint: the teacher's model, a local folder or an s3:// prefix (as model.path), served by "
        "the recording's serve step with the config's engine (engine.kind dev or vllm) and recorded as text.",
    )
    error_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="kind reference: chance that a turn plays another of its candidate turns instead of the "
        "reference (a turn without other candidates is always played right).",
    )
    url: str | None = Field(None, description="kind endpoint: the endpoint's base URL (http(s)://HOST[:PORT][/v1]).")
    model: str | None = Field(None, description="kind endpoint: the model name sent to it.")
    api: Literal["chat", "messages"] = Field(
        "chat",
        description="kind endpoint: the API it speaks. chat: OpenAI-compatible chat completions, whatever the harness "
        "speaks; messages: Anthropic Messages, for a harness that speaks Messages (Claude Code), whose calls then "
        "pass through as sent and get the teacher's own Messages back.",
    )
    api_key_env: str | None = Field(
        None,
        description="kind endpoint: the environment variable holding its API key locally, and the key of "
        "`secret` holding it on a cluster; unset: no key is sent.",
    )
    secret: str = Field("openforge-teacher", description="kind endpoint, on a cluster: the Secret that holds the key.")
    egress_cidrs: list[str] | None = Field(
        None,
        description="kind endpoint, on a cluster: the addresses (CIDRs) a recording's rollout pods may reach the teacher "
        "at, in the NetworkPolicy `openforge record --compile-only` writes (it cannot name hosts). Unset: any public "
        "address on the teacher's port (private, loopback, link-local and carrier-grade NAT ranges excepted).",
    )
    usd_per_million_tokens: TeacherPrices | None = Field(
        None,
        description="kind endpoint: its prices, so each session's outcome keeps its cost in dollars "
        "(extra.teacher_cost_usd) beside the tokens the teacher billed, and `openforge record` prints the total.",
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"teacher.url {value!r} must start with http:// or https://")
        return value

    @field_validator("egress_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str] | None) -> list[str] | None:
        for cidr in value or ():
            try:
                ipaddress.ip_network(cidr)
            except ValueError as exc:
                raise ValueError(f"teacher.egress_cidrs: {exc} (write an address block such as 203.0.113.0/24)") from None
        return value

    @field_validator("api_key_env")
    @classmethod
    def _key_name(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not _ENV_NAME.match(value):
            raise ValueError(f"teacher.api_key_env {value!r} must be an environment variable's name (letters, digits, _)")
        if value.startswith(_PASSED_TO_EVERY_CONTAINER):
            raise ValueError(
                f"teacher.api_key_env {value!r}: variables named {_PASSED_TO_EVERY_CONTAINER}* reach every container "
                "of a sandboxed rollout, the harness included; name it otherwise (e.g. TEACHER_API_KEY)"
            )
        return value

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> "TeacherConfig":
        if self.error_rate and self.kind != "reference":
            raise ValueError("teacher.error_rate applies to kind reference only; remove it")
        if self.path is not None and self.kind != "checkpoint":
            raise ValueError(f"teacher.path names a kind checkpoint teacher's model; kind {self.kind} has none: remove it")
        if self.kind == "endpoint":
            if self.url is None or self.model is None:
                raise ValueError("teacher.kind endpoint needs teacher.url and teacher.model")
            return self
        if self.kind == "checkpoint" and self.path is None:
            raise ValueError("teacher.kind checkpoint needs teacher.path: the model folder or s3:// prefix to serve")
        given = [name for name in _ENDPOINT_FIELDS if getattr(self, name) is not None]
        given += ["api"] if self.api != "chat" else []
        if given:
            what = "serves the tasks' reference turns" if self.kind == "reference" else "is served by the recording itself"
            raise ValueError(f"teacher.kind {self.kind} {what}: remove teacher.{given[0]}")
        return self
