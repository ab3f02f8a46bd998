"""Peak memory of one CPU update on long agent rows: the figure in docs/trainer.md ("Memory").

    .venv/bin/python scripts/cpu_update_memory.py --rows 8 --tokens 22000
    .venv/bin/python scripts/cpu_update_memory.py --rows 8 --tokens 22000 --siblings-share-prompt

Builds the tiny model (components.engine.tiny_model), then ``--rows`` rollouts of one
multi-turn conversation each (a ~20k-token harness prompt, then turns of a sampled answer
and a tool output, ~``--tokens`` in all), two GRPO groups with differing rewards, the batch
our builder makes of them, and one ``cpu_update``. Prints peak RSS (ru_maxrss) and time.
``--siblings-share-prompt``: a group's rollouts start from the same first prompt, as a real
harness's siblings do, so the update runs it once per micro-batch (shared_prefix.py).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rollout(rollout_id: str, first_prompt: list[int], turns: int, vocab: int, rng: random.Random) -> list:
    from components.core.trajectory import RecordedCall

    answer, tool = _ANSWER, _TOOL
    prompt = list(first_prompt)
    calls = []
    for index in range(turns):
        completion = [rng.randrange(3, vocab) for _ in range(answer)]
        calls.append(
            RecordedCall(
                session_id=rollout_id, call_index=index, api="chat.completions", request={},
                prompt_token_ids=list(prompt), completion_token_ids=completion,
                completion_logprobs=[-8.3] * answer, sampling={"temperature": 1.0},
                started_at=0.0, latency_ms=1.0, upstream_status=200,
            )
        )  # fmt: skip
        prompt += completion + [rng.randrange(3, vocab) for _ in range(tool)]
    return calls


_ANSWER, _TOOL = 128, 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=22000)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--micro-batch-size", type=int, default=8)
    parser.add_argument("--siblings-share-prompt", action="store_true",
                        help="a group's rollouts start from the same first prompt, as a real harness's do")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    from components.core.config import AlgorithmConfig
    from components.core.outcome import RewardRecord, RolloutStatus
    from components.engine.tiny_model import init_tiny_model
    from components.trainer.batch import build_batch
    from components.trainer.cpu_update import cpu_update

    torch.set_num_threads(2)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        model = AutoModelForCausalLM.from_pretrained(init_tiny_model(Path(tmp) / "tiny"), dtype=torch.float32)
    vocab = model.config.vocab_size
    calls, records = {}, []
    prompt_length = args.tokens - args.turns * (_ANSWER + _TOOL)
    first_prompts: dict[str, list[int]] = {}
    for i in range(args.rows):
        rollout_id, task = f"t{i // 4}-s{i % 4}", f"t{i // 4}"  # groups of 4, rewards 1 0 1 0
        fresh = [rng.randrange(3, vocab) for _ in range(prompt_length)]
        first = first_prompts.setdefault(task, fresh) if args.siblings_share_prompt else fresh
        calls[rollout_id] = _rollout(rollout_id, first, args.turns, vocab, rng)
        records.append(RewardRecord(rollout_id=rollout_id, task_id=task, group_id=f"it0-{task}",
                                    reward=float(i % 2 == 0), usable=True, status=RolloutStatus.OK))  # fmt: skip
    algorithm = AlgorithmConfig(micro_batch_size=args.micro_batch_size)
    data, stats = build_batch(calls, records, algorithm, pad_token_id=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    metrics = cpu_update(model, data, algorithm, seed=0)
    print(json.dumps({
        "rows": stats.rows, "tokens_per_row": int(data.batch["attention_mask"].sum(1).max()),
        "trained_tokens": stats.trained_tokens, "micro_batch_size": args.micro_batch_size,
        "micro_batch_tokens": algorithm.micro_batch_tokens, "siblings_share_prompt": args.siblings_share_prompt,
        "peak_rss_gib_before_update": round(before / 2**20, 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "update_s": round(time.monotonic() - start, 1), "train/loss": metrics["train/loss"],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
