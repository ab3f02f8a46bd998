"""Replay a stored GRPO batch offline under other `algorithm:` settings, to choose them without a run.

A by-hand GRPO run from the SFT checkpoint costs a bench iteration (80 rollouts, ~13 min on
2 cores); replaying one iteration's stored batch (``<run>/iterations/<k>/batch.pt``) on the
checkpoint that sampled it costs a minute or two of CPU a setting. Each updated policy is scored by the
teacher's passed sessions: per task, the probability that the policy writes one of them
token for token at the rollouts' temperature. That is a lower bound of its pass rate (other
sessions pass too), so it ranks settings and shows collateral damage (a task no group
rewarded that loses probability); it does not replace a run's pass rates.

    .venv/bin/python -m benchmarks.free_learning.replay --seed 0 --set learning_rate=3e-4 --set learning_rate=1e-3,epochs=1

reads seed 0's store of `make bench-free-learning` (its ``record`` and ``sft`` stages, and an
iteration of its ``grpo`` stage, must have run).
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from components.core.config import AlgorithmConfig
from components.core.trajectory import RecordedCall
from components.trainer.batch import row_tensors
from components.trainer.cpu_update import build_optimizer, cpu_update, micro_batches, response_log_probs
from components.trainer.sft import sft_rows, task_of


def session_probabilities(
    model: Any, sessions: Mapping[str, Sequence[RecordedCall]], pad_token_id: int, temperature: float,
    limits: tuple[int, int],
) -> dict[str, float]:  # fmt: skip
    """Per task, the mean over its sessions of the probability that ``model`` sampling at
    ``temperature`` writes the session's completions, given its prompts and tool output."""
    import torch

    by_task: dict[str, list[float]] = defaultdict(list)
    model.eval()
    with torch.no_grad():
        for key in sorted(sessions):
            batch = row_tensors(sft_rows({key: sessions[key]}, limits), pad_token_id)
            total = 0.0
            for micro in micro_batches(batch, 8, 32768):
                log_prob, _ = response_log_probs(model, micro, temperature)
                total += float((log_prob * micro["response_mask"]).sum())
            by_task[task_of(key)].append(math.exp(total))
    return {task: statistics.fmean(p) for task, p in sorted(by_task.items())}


def replay(
    model: Any, data: Any, base: AlgorithmConfig, variants: Sequence[Mapping[str, Any]], score: Any, seed: int
) -> list[tuple[dict[str, Any], dict[str, float], dict[str, float]]]:
    """For each variant of ``base``: (its changes, ``score`` of the updated copy of ``model``,
    the update's train metrics). ``model`` and ``data`` are left as they were."""
    out = []
    for changes in variants:
        settings = base.model_copy(update=dict(changes))  # parse_variant validated them
        updated = copy.deepcopy(model)
        metrics = cpu_update(updated, copy.deepcopy(data), settings, seed=seed, optimizer=build_optimizer(updated, settings))
        out.append((dict(changes), score(updated), metrics))
    return out


def parse_variant(text: str, base: AlgorithmConfig) -> dict[str, Any]:
    """``learning_rate=3e-4,epochs=8`` as typed changes of ``base`` (an unknown name is refused)."""
    out: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in AlgorithmConfig.model_fields or not value:
            raise SystemExit(f"--set {text!r}: {item!r} is not NAME=VALUE of an `algorithm:` setting")
        try:
            out[name] = getattr(AlgorithmConfig.model_validate(base.model_dump() | {name: value}), name)
        except ValidationError as exc:
            raise SystemExit(f"--set {text!r}: {exc.errors()[0]['msg']} ({name}={value})") from None
    return out


def _table(before: dict[str, float], results: list[tuple[dict, dict, dict]]) -> str:
    tasks = list(before)
    lines = [
        "| setting | expected pass rate (lower bound) | tasks up / down | largest drop |",
        "|---|---:|---:|---:|",
        f"| checkpoint as sampled | {statistics.fmean(before.values()):.3f} | | |",
    ]
    for changes, after, _ in results:
        deltas = [after[t] - before[t] for t in tasks]
        name = ", ".join(f"{k}={v}" for k, v in changes.items()) or "the config's own"
        up, down = sum(d > 0.005 for d in deltas), sum(d < -0.005 for d in deltas)
        lines.append(f"| {name} | {statistics.fmean(after.values()):.3f} | {up} / {down} | {min(deltas):+.3f} |")
    return "\n".join(lines)


def main() -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from benchmarks.bench_free_learning import WORKDIR
    from benchmarks.free_learning.results import BARRED_HARNESS
    from benchmarks.free_learning.seed_run import seed_config
    from components.core.checkpoints import fetch_committed
    from components.core.storage import RunLayout, open_store
    from components.trainer.batch import read_stored_batch
    from components.trainer.sft_step import recorded_sessions
    from components.trainer.text_calls import with_student_tokens

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the bench seed whose store to read")
    parser.add_argument("--iteration", type=int, default=0, help="the grpo run's iteration whose batch to replay")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE,...",
                        help="a variant of the config's `algorithm:` (repeatable); none: the config's own")  # fmt: skip
    parser.add_argument("--workdir", type=Path, default=WORKDIR / BARRED_HARNESS)
    args = parser.parse_args()

    config = seed_config(args.seed, (args.workdir / f"seed-{args.seed}").resolve())
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    if not store.exists(layout.batch(args.iteration)):
        raise SystemExit(f"no batch of iteration {args.iteration} under {store.root}/{layout.batch(args.iteration)}: "
                         "run the seed's grpo stage (make bench-free-learning) first")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "policy"  # the one that sampled the batch
        fetch_committed(store, layout, args.iteration, checkpoint)
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        pad = AutoConfig.from_pretrained(checkpoint).pad_token_id
        model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
        data = read_stored_batch(store, layout, args.iteration, Path(tmp))
    sessions, _ = recorded_sessions(config, store)
    sessions = {key: [with_student_tokens(c, tokenizer) for c in calls] for key, calls in sessions.items()}
    limits, temperature = config.algorithm.row_limits(config.engine.max_model_len), config.algorithm.temperature

    def score(model: Any) -> dict[str, float]:
        return session_probabilities(model, sessions, pad, temperature, limits)

    variants = [parse_variant(text, config.algorithm) for text in args.set] or [{}]
    results = replay(model, data, config.algorithm, variants, score, config.seed)
    print(f"{config.name} iteration {args.iteration}'s batch on its checkpoint, {len(sessions)} teacher sessions:")
    print(_table(score(model), results))


if __name__ == "__main__":
    main()
