"""``engine.vllm``: how the serve step runs vLLM's OpenAI server when ``engine.kind`` is ``vllm``.

The flags recorded training depends on (token ids, processed logprobs, no sampling
defaults from the checkpoint, runtime LoRA loading) are not settings: the command
builder in ``components/engine/vllm_launch.py`` always adds them. These are the knobs
that legitimately differ between deployments.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from components.core.parsers import ReasoningParserName, ToolCallParserName

_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
# Flags the command builder sets because records depend on them: appended later in extra_args
# they would win (argparse keeps the last), e.g. --generation-config auto would let a
# checkpoint's top_k 20 shape samples the record says were drawn with top_k off.
PINNED_FLAGS = ("--generation-config", "--logprobs-mode", "--return-tokens-as-token-ids")


class VllmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    python: str = Field(
        "python3",
        description="The Python that has vLLM; the step runs `PYTHON -m vllm.entrypoints.openai.api_server`. "
        "`python3` in the engine image; `.venv-vllm/bin/python` after `make vllm` (vLLM's CPU build) on a "
        "machine without a GPU. A relative path is taken from the directory the step starts in.",
    )
    served_model_name: str = Field(
        "policy", description="Model name the engine serves (the policy's LoRA adapter has this name)."
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one engine replica spans.")
    gpu_memory_utilization: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Share of GPU memory vLLM may take; on vLLM's CPU build, the share of the host's memory "
        "(set kv_cache_gib there instead).",
    )
    kv_cache_gib: float | None = Field(
        None,
        gt=0,
        description="KV cache size in GiB (`--kv-cache-memory-bytes`); null: vLLM sizes it from "
        "gpu_memory_utilization. Set it on CPU: there 0.9 of a shared host's memory is refused or taken.",
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "bfloat16",
        description="Weights and activations dtype (the trainer's export is bfloat16); float32 on CPU, where the "
        "tiny model's logprobs are then those of the trainer's float32 forward pass.",
    )
    tool_call_parser: ToolCallParserName | None = Field(
        "hermes",
        description="Tool-call format of the policy's answers, by vLLM's parser name (Qwen2.5: hermes, "
        "Qwen3-Coder: qwen3_coder); null: no tool parsing. The engine (vLLM or the dev engine) and the proxy's "
        "token path both read answers with it (docs/proxy.md#answer-formats).",
    )
    reasoning_parser: ReasoningParserName | None = Field(
        None,
        description="Reasoning format, by vLLM's parser name (qwen3, deepseek_r1: <think>...</think>); null: "
        "answers carry no reasoning field. Read by the engine and the proxy's token path alike.",
    )
    max_lora_rank: int = Field(64, ge=1, description="Largest adapter rank the engine accepts (>= trainer.lora.rank).")
    extra_args: list[str] = Field(default_factory=list, description="More vLLM server arguments, appended last (e.g. `--enforce-eager`).")
    env: dict[str, str] = Field(default_factory=dict, description="More environment variables for vLLM.")

    @field_validator("extra_args")
    @classmethod
    def _no_pinned_flags(cls, value: list[str]) -> list[str]:
        for arg in value:
            flag = arg.split("=", 1)[0]
            if flag in PINNED_FLAGS:
                raise ValueError(
                    f"extra_args may not set {flag}: OpenForge pins it so that records match what vLLM "
                    "sampled (docs/engine.md#vllm-enginekind-vllm); remove it"
                )
        return value

    @field_validator("served_model_name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        # It doubles as a LoRA adapter name and a URL-less identifier in records.
        if not _MODEL_NAME.match(value):
            raise ValueError(f"served_model_name {value!r} must be letters, digits, '.', '_' or '-'")
        return value
