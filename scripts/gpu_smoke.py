"""The GPU path in a few minutes on one GPU; figures to a JSON file (run by scripts/gpu_smoke.sh).

Stages, each timed and recorded even when another fails:

1. ``update_loop``: the trainer's update (``cpu_update``: veRL's GRPO policy loss, our
   micro-batching and optimizer step; device-agnostic) on the GPU, bf16 autocast, with a
   random Qwen2 of ~300M parameters made locally, on a recorded batch built by our
   batch builder from synthetic multi-turn calls. Tokens/s, step time, peak memory,
   loss before and after.

Every stage trains on the same batch, and its rollout logprobs are the policy's own
(``policy_logprobs``), as a real rollout's would be: made-up figures would drive the
rollout-correction weights (exp(old - rollout)) far from 1 and make the reported loss
say nothing.
2. ``verl_trainer``: the real GPU step, ``verl_update``: Ray, veRL's FSDP actor worker,
   one update through ``RecordedBatchTrainer``, FSDP shards merged by veRL's model
   merger into a checkpoint.
3. ``verl_sft``: `openforge sft`'s veRL backend, ``verl_sft_update``: veRL's own SFT trainer
   (FSDP engine) in child processes on the batch's recorded calls as sessions, two epochs,
   exported to a HuggingFace folder. Its wall time, per-epoch losses and export.
4. ``vllm_serve``: when vLLM is importable, ``vllm serve`` on that checkpoint with our
   command line, gated on health and policy version, one chat completion with token ids
   and logprobs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# ~300M parameters: 12 Qwen2 layers of width 1024 and Qwen's real vocabulary (151,936), whose
# logits dominate a policy update's memory just as they do for real Qwen models.
MODEL_SHAPE = {
    "vocab_size": 151936,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": True,
}
# --rehearse: the same stages on whatever device is there, with a model small enough for a CPU.
REHEARSAL_SHAPE = {**MODEL_SHAPE, "vocab_size": 4096, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                   "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip


def _machine() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), gpus=torch.cuda.device_count())
    for package in ("verl", "transformers", "ray", "flash_attn"):
        try:
            info[package] = __import__(package).__version__
        except Exception:  # noqa: BLE001 - any import failure means "not usable here"
            info[package] = None
    info["vllm_cli"] = shutil.which("vllm")  # vLLM pins its own torch: it may live in another venv
    return info


def make_policy(out: Path, seed: int, shape: dict[str, Any]) -> Path:
    """A random ~300M Qwen2 checkpoint (version 0) with the tiny model's tokenizer; no hub needed."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from components.core.checkpoints import write_checkpoint_info
    from components.engine.tiny_model import init_tiny_model

    init_tiny_model(out, seed=seed)  # tokenizer, chat template, generation config
    tiny = json.loads((out / "config.json").read_text())
    config = Qwen2Config(
        **shape,
        **{k: tiny[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id")},
        initializer_range=0.02,
        dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    write_checkpoint_info(out, {"policy_version": "0", "iteration": None, "source": "gpu-smoke"})
    return out


def recorded_batch(config: Any, *, tasks: int, prompt_tokens: int, turn_tokens: int, seed: int) -> Any:
    """Our batch builder on synthetic recorded calls (``synthetic_sessions``); the logprobs
    are placeholders until ``policy_logprobs`` fills in the policy's own."""
    from components.trainer.batch import build_batch

    calls, records = synthetic_sessions(config, tasks=tasks, prompt_tokens=prompt_tokens, turn_tokens=turn_tokens, seed=seed)
    data, _ = build_batch(calls, records, config.algorithm, pad_token_id=0, max_model_len=config.engine.max_model_len)
    return data


def synthetic_sessions(config: Any, *, tasks: int, prompt_tokens: int, turn_tokens: int, seed: int) -> tuple[dict, list]:
    """Recorded calls by rollout and their reward records: two turns per rollout (the second
    extends the first with tool output), rewards alternating 1/0 within each task's group."""
    import random

    from components.core.outcome import RewardRecord, RolloutStatus
    from components.core.trajectory import RecordedCall

    rng = random.Random(seed)
    ids = lambda n: [rng.randrange(10, 4000) for _ in range(n)]  # noqa: E731 - inside the tokenizer's range
    calls, records = {}, []
    for task in range(tasks):
        for sample in range(config.rollout.samples_per_task):
            rollout = f"task{task}-s{sample}"
            prompt, first, tool, second = ids(prompt_tokens), ids(turn_tokens), ids(32), ids(turn_tokens)
            turns = [(prompt, first), (prompt + first + tool, second)]
            calls[rollout] = [
                RecordedCall(
                    session_id=rollout, call_index=i, api="chat.completions", request={}, prompt_token_ids=p,
                    completion_token_ids=c, completion_logprobs=[0.0] * len(c), sampling={"temperature": 1.0},
                    started_at=0.0, latency_ms=1.0, upstream_status=200,
                )  # fmt: skip
                for i, (p, c) in enumerate(turns)
            ]
            records.append(
                RewardRecord(
                    rollout_id=rollout, task_id=f"task{task}", group_id=f"it0-task{task}",
                    reward=float(sample % 2), usable=True, status=RolloutStatus.OK,
                )  # fmt: skip
            )
    return calls, records


def policy_logprobs(policy: Path, data: Any, micro_size: int) -> dict[str, float]:
    """Replace ``data``'s rollout logprobs with the policy's own (fp32 weights, bf16 compute, as
    the engine samples); returns what the correction weights then look like."""
    import torch
    from transformers import AutoModelForCausalLM

    from components.trainer.cpu_update import response_log_probs

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(policy, dtype=torch.float32).to(device)
    batch = data.batch.to(device)
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16):
        own = [response_log_probs(model, micro, 1.0)[0].float() for micro in batch.split(micro_size)]
    mask = data.batch["response_mask"].bool()
    data.batch["rollout_log_probs"] = (torch.cat(own).cpu() * mask).to(data.batch["rollout_log_probs"].dtype)
    del model
    tokens = data.batch["rollout_log_probs"][mask]
    return {"mean_rollout_log_prob": round(float(tokens.mean()), 4), "rollout_tokens": int(mask.sum())}


def stage_update_loop(policy: Path, data: Any, config: Any, steps: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from components.trainer.cpu_update import actor_config, cpu_update, policy_loss, response_log_probs

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(policy, dtype=torch.float32).to(device)
    batch = data.to(device)
    micro_size = config.algorithm.micro_batch_size
    bf16 = lambda: torch.autocast(device, dtype=torch.bfloat16)  # noqa: E731 - fp32 master weights, bf16 compute
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def loss() -> float:
        settings = actor_config(config.algorithm, len(batch))
        mask = batch.batch["response_mask"]
        settings.global_batch_info.update(dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=len(batch))
        with torch.no_grad(), bf16():
            return sum(
                float(policy_loss(*(t.float() for t in response_log_probs(model, micro, 1.0)), micro, settings)[0])
                for micro in batch.batch.split(micro_size)
            )

    before = loss()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        sync()
        start = time.perf_counter()
        with bf16():
            metrics = cpu_update(model, batch, config.algorithm, seed=0)
        sync()
        times.append(time.perf_counter() - start)
    tokens = int(batch.batch["attention_mask"].sum())
    steady = times[1:] or times  # the first step pays for kernel selection and allocator warm-up
    return {
        "device": device,
        "parameters_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
        "rows": len(batch),
        "tokens_per_update": tokens,
        "step_s": [round(t, 3) for t in times],
        "tokens_per_s": round(tokens / (sum(steady) / len(steady))),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None,
        "loss_before": before,
        "loss_after": loss(),
        "last_metrics": metrics,
    }


def stage_verl_trainer(policy: Path, data: Any, config: Any, work: Path) -> dict[str, Any]:
    import importlib.util

    import torch

    from components.trainer.verl_step import verl_update

    if importlib.util.find_spec("flash_attn") is None:
        # veRL defaults to flash-attention 2 for packed sequences; without it, PyTorch's SDPA.
        config.trainer.overrides.append("+actor_rollout_ref.model.override_config.attn_implementation=sdpa")
    start = time.perf_counter()
    metrics, checkpoint = verl_update(config, data, policy, work, {"policy_version": "1", "parent_version": "0"})
    elapsed = time.perf_counter() - start
    return {
        "wall_s": round(elapsed, 1),
        "tokens_per_s_incl_startup": round(int(data.batch["attention_mask"].sum()) / elapsed),
        "driver_peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if torch.cuda.is_available() else None,
        "metrics": metrics,
        "checkpoint": str(checkpoint),
        "checkpoint_files": sorted(p.name for p in checkpoint.iterdir()),
    }


def stage_verl_sft(policy: Path, sessions: dict, config: Any, work: Path) -> dict[str, Any]:
    import torch

    from components.trainer.verl_sft import export_hf_model, verl_sft_update

    if not torch.cuda.is_available():  # --rehearse on a CPU: veRL's CPU platform and gloo
        config = config.model_copy(update={"trainer": config.trainer.model_copy(update={"device": "cpu"})})
    start = time.perf_counter()
    report, run = verl_sft_update(config, sessions, policy, work)
    trained_s = time.perf_counter() - start
    exported = export_hf_model(run.model_dir, policy, work / "huggingface", {"policy_version": "0", "source": "gpu-smoke sft"})
    return {
        "wall_s_incl_startup": round(trained_s, 1),
        "rows": report.rows,
        "target_tokens": report.target_tokens,
        "target_tokens_per_s_incl_startup": round(report.target_tokens * len(report.epochs) / trained_s),
        "epochs": [e.model_dump(mode="json") for e in report.epochs],
        "exported_files": sorted(p.name for p in exported.iterdir()),
    }


def stage_vllm_serve(checkpoint: Path, config: Any, work: Path, vllm_cli: str) -> dict[str, Any]:
    import subprocess

    from components.core.services import free_port
    from components.engine.readiness import wait_until_serving
    from components.engine.vllm_launch import vllm_serve_command
    from components.engine.vllm_serve import stage_policy

    # The step runs vLLM as `<python> -m vllm.entrypoints.openai.api_server`: the python of the
    # CLI found on PATH is the one whose site-packages hold vLLM (its script's shebang).
    config.engine.vllm.python = Path(vllm_cli).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
    staged = stage_policy(checkpoint, work / "served")
    port = free_port()
    launch = vllm_serve_command(config, staged, host="127.0.0.1", port=port)
    url = f"http://127.0.0.1:{port}"
    log = (work / "vllm.log").open("w")
    start = time.perf_counter()
    process = subprocess.Popen(launch.argv, cwd=launch.cwd, env={**os.environ, **launch.env}, stdout=log, stderr=log)
    try:
        model = wait_until_serving(url, staged.version, timeout_s=600, exited=process.poll)
        ready_s = time.perf_counter() - start
        body = {
            "model": model, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 64,
            "temperature": 1.0, "top_p": 1.0, "logprobs": True, "return_token_ids": True, "ignore_eos": True,
        }  # fmt: skip
        request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
        choice = answer["choices"][0]
        return {
            "ready_s": round(ready_s, 1),
            "policy_version_gate": "passed",
            "argv": launch.argv,
            "completion_tokens": len(choice.get("token_ids") or []),
            "logprobs": len((choice.get("logprobs") or {}).get("content") or []),
            "prompt_token_ids": len(answer.get("prompt_token_ids") or []),
            "decode_tokens_per_s_single_request": round(len(choice.get("token_ids") or []) / (time.perf_counter() - t0)),
        }
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def _run(name: str, results: dict[str, Any], stage: Callable[[], dict[str, Any]]) -> None:
    start = time.perf_counter()
    try:
        results[name] = {"status": "ok", **stage()}
    except Exception as exc:  # noqa: BLE001 - a failed stage is a finding, the next still runs
        results[name] = {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-4000:]}
    results[name]["stage_s"] = round(time.perf_counter() - start, 1)
    print(f"[gpu-smoke] {name}: {results[name]['status']} in {results[name]['stage_s']} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the figures.")
    parser.add_argument("--work", type=Path, default=REPO / ".openforge" / "gpu-smoke", help="Scratch folder.")
    parser.add_argument("--tasks", type=int, default=8, help="Tasks in the synthetic batch (x4 rollouts, 2 turns).")
    parser.add_argument("--prompt-tokens", type=int, default=512)
    parser.add_argument("--turn-tokens", type=int, default=256)
    parser.add_argument("--steps", type=int, default=4, help="Timed updates of the update-loop stage.")
    parser.add_argument("--skip", action="append", default=[], choices=["verl_trainer", "verl_sft", "vllm_serve"])
    parser.add_argument("--rehearse", action="store_true", help="A tiny model, to rehearse the script without a GPU.")
    args = parser.parse_args()

    from components.core.config import ExperimentConfig

    config = ExperimentConfig(
        name="gpu-smoke",
        tasks={"source": "synthetic"},
        algorithm={"learning_rate": 1e-5, "micro_batch_size": 8},
        sft={"recordings": "synthetic", "max_epochs": 2, "learning_rate": 1e-5, "micro_batch_size": 8},
        trainer={"backend": "verl", "n_gpus_per_node": 1},
        engine={"kind": "vllm", "max_model_len": 4096, "vllm": {"gpu_memory_utilization": 0.5, "extra_args": ["--enforce-eager"]}},
    )
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": _machine(), "config": {k: v for k, v in vars(args).items() if k != "out"}}
    results["config"]["work"] = str(args.work)
    policy = make_policy(args.work / "policy-0", seed=0, shape=REHEARSAL_SHAPE if args.rehearse else MODEL_SHAPE)
    data = recorded_batch(config, tasks=args.tasks, prompt_tokens=args.prompt_tokens, turn_tokens=args.turn_tokens, seed=0)
    results["batch"] = policy_logprobs(policy, data, config.algorithm.micro_batch_size)
    _run("update_loop", results, lambda: stage_update_loop(policy, data, config, args.steps))
    if "verl_trainer" not in args.skip:
        _run("verl_trainer", results, lambda: stage_verl_trainer(policy, data, config, args.work / "verl"))
    if "verl_sft" not in args.skip:
        calls, _ = synthetic_sessions(config, tasks=args.tasks, prompt_tokens=args.prompt_tokens, turn_tokens=args.turn_tokens, seed=0)
        _run("verl_sft", results, lambda: stage_verl_sft(policy, calls, config, args.work / "verl-sft"))
    checkpoint = Path(results.get("verl_trainer", {}).get("checkpoint") or policy)
    vllm = results["machine"]["vllm_cli"]
    if "vllm_serve" not in args.skip and vllm:
        _run("vllm_serve", results, lambda: stage_vllm_serve(checkpoint, config, args.work, vllm))
    elif "vllm_serve" not in args.skip:
        results["vllm_serve"] = {"status": "skipped", "reason": "no vllm CLI on PATH (GPU_SMOKE_VLLM=1 installs one)"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"[gpu-smoke] figures in {args.out}", flush=True)
    return 0 if results["update_loop"]["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
