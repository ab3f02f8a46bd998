"""GRPO offline on each training task's first turn: `algorithm:` and group settings compared in
minutes, where a bench run's GRPO stage takes most of an hour.

The first call of a cold-start task decides most of its verdict (the command and its file
name; the finishing turn is learned early), and its prompt is the same in every session of
the task: the harness builds it from the task alone. So this samples that call from the
prompt the teacher's recordings hold, with transformers' ``generate`` at the rollouts'
temperature, grades it by its tool call's command against the task's reference one, and
trains with the bench's own pieces: veRL's GRPO advantage estimator and the CPU update
(``cpu_update``), on rows of the bench's layout. After each update it measures the pass rate
on fresh samples, so the curve's first point is the SFT checkpoint's.

Limits, against a bench run: one turn, not the session (a run also grades the finishing turn
and lets a wrong first command be mended later); the reference command is one of several
that pass (``wc -l < f`` counts lines too), so the rate is a lower bound; sampling is
transformers', not the dev engine's. On seed 0's SFT checkpoint it measured 0.459 where the
bench's GRPO iteration 0 sampled 0.450, and the learning rate that collapses a bench run
collapses it too.

    .venv/bin/python -m benchmarks.free_learning.first_turn --seed 0 --group 8 --set learning_rate=5e-4

reads seed 0's store of `make bench-free-learning`, running its ``record`` and ``sft`` stages
there first where they have not run (~11 min; the stored results are not touched).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.free_learning.replay import parse_variant
from components.core.config import AlgorithmConfig
from components.core.trajectory import RecordedCall
from components.trainer.rows import Row
from components.trainer.sft import task_of

_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)

_LOGGED = ("train/clip_frac", "train/kl", "train/grad_norm", "train/entropy")
Sample = tuple[list[int], list[float]]  # a completion's token ids and their log-probs at the temperature
Grade = Callable[[str, list[int]], float]  # (task id, completion ids) -> reward


@dataclass(frozen=True)
class FirstTurn:
    task_id: str
    prompt: list[int]  # the first call's prompt, as the harness sent it
    command: str  # the reference's first shell command


def first_turns(sessions: Mapping[str, Sequence[RecordedCall]], commands: Mapping[str, str]) -> list[FirstTurn]:
    """Each task's first prompt from its recorded sessions (any one: they are the same), by task id.
    A task with a reference command but no recorded session is refused: it would be left out unseen."""
    prompts: dict[str, list[int]] = {}
    for key in sorted(sessions):
        first = min(sessions[key], key=lambda call: call.call_index)
        prompts.setdefault(task_of(key), first.prompt_token_ids)
    missing = sorted(set(commands) - set(prompts))
    if missing:
        raise SystemExit(f"no recorded session of {', '.join(missing)}: record with sft.keep: all, or drop those tasks")
    return [FirstTurn(task, prompts[task], commands[task]) for task in sorted(commands)]


def command_of(text: str) -> str | None:
    """The command of the first hermes tool call in ``text``; None when there is none or it does not parse."""
    match = _TOOL_CALL.search(text)
    if match is None:
        return None
    try:
        arguments = json.loads(match.group(1)).get("arguments", {})
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        command = arguments.get("command")
    except (ValueError, AttributeError):
        return None
    return command if isinstance(command, str) else None


def same_command(written: str | None, reference: str) -> bool:
    return written is not None and written.split() == reference.split()


def sample_group(
    model: Any, prompt: list[int], n: int, temperature: float, max_new_tokens: int, stop: set[int]
) -> list[Sample]:
    """``n`` completions of ``prompt``, each cut after its first ``stop`` token, with log-probs at ``temperature``."""
    import torch

    ids = torch.tensor([prompt] * n)
    with torch.no_grad():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
            max_new_tokens=max_new_tokens, output_logits=True, return_dict_in_generate=True,
        )  # fmt: skip
    tokens = out.sequences[:, len(prompt) :]
    log_probs = torch.log_softmax(torch.stack(out.logits, dim=1).float() / temperature, dim=-1)
    picked = log_probs.gather(-1, tokens[..., None])[..., 0]
    samples = []
    for row, row_log_probs in zip(tokens.tolist(), picked.tolist()):
        end = next((i + 1 for i, token in enumerate(row) if token in stop), len(row))
        samples.append((row[:end], row_log_probs[:end]))
    return samples


def grpo_batch(
    groups: Sequence[tuple[FirstTurn, list[Sample], list[float]]], algorithm: AlgorithmConfig, pad: int
) -> Any:
    """The DataProto of the groups whose rewards differ (veRL's GRPO advantages), None when none does."""
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    from components.trainer.batch import row_tensors

    rows, rewards, uids = [], [], []
    for turn, samples, scores in groups:
        if len(set(scores)) < 2:
            continue
        for (ids, log_probs), score in zip(samples, scores):
            rows.append(Row(f"{turn.task_id}-{len(rows)}", list(turn.prompt), ids, [1] * len(ids), log_probs))
            rewards.append(score)
            uids.append(turn.task_id)
    if not rows:
        return None
    advantages, _ = compute_grpo_outcome_advantage(
        token_level_rewards=torch.tensor([[r] for r in rewards]), response_mask=torch.ones(len(rows), 1),
        index=np.array(uids, dtype=object), norm_adv_by_std_in_grpo=algorithm.norm_adv_by_std,
    )  # fmt: skip
    tensors = row_tensors(rows, pad)
    tensors["advantages"] = advantages[:, :1].expand_as(tensors["response_mask"]) * tensors["response_mask"]
    return DataProto.from_dict(tensors=tensors, meta_info={"temperature": algorithm.temperature})


@dataclass
class Iteration:
    rate: float  # on fresh samples, before this iteration's update
    mixed: int  # groups with a signal
    dead: int  # groups that all failed


def train(
    model: Any, turns: Sequence[FirstTurn], algorithm: AlgorithmConfig, grade: Grade, *, iterations: int, group: int,
    eval_samples: int, max_new_tokens: int, stop: set[int], pad: int, seed: int, shuffle: bool = False,
    log: Callable[[str], None] = print,
) -> list[Iteration]:  # fmt: skip
    """``iterations`` GRPO updates of ``model`` in place, from groups of ``group`` first turns a task;
    returns each iteration's measured pass rate and one more after the last update. ``shuffle``:
    the control's rewards, shuffled within each group."""
    import random

    import torch

    from components.trainer.cpu_update import build_optimizer, cpu_update

    torch.manual_seed(seed)
    shuffler, optimizer, curve = random.Random(seed), build_optimizer(model, algorithm), []
    for iteration in range(iterations + 1):
        graded = [grade(t.task_id, ids) for t in turns for ids, _ in sample_group(
            model, t.prompt, eval_samples, algorithm.temperature, max_new_tokens, stop)]  # fmt: skip
        rate = statistics.fmean(graded)
        if iteration == iterations:
            curve.append(Iteration(rate, 0, 0))
            break
        groups = []
        for turn in turns:
            samples = sample_group(model, turn.prompt, group, algorithm.temperature, max_new_tokens, stop)
            rewards = [grade(turn.task_id, ids) for ids, _ in samples]
            if shuffle:
                shuffler.shuffle(rewards)
            groups.append((turn, samples, rewards))
        curve.append(Iteration(rate, sum(len(set(r)) > 1 for *_, r in groups), sum(not any(r) for *_, r in groups)))
        data = grpo_batch(groups, algorithm, pad)
        metrics = {} if data is None else cpu_update(model, data, algorithm, seed=seed + iteration, optimizer=optimizer)
        point = curve[-1]
        # The clip fraction and KL say whether PPO's clip, not the learning rate, bounded the step.
        moved = ", ".join(f"{name.removeprefix('train/')} {metrics[name]:.3g}" for name in _LOGGED if name in metrics)
        log(f"iteration {iteration}: pass rate {rate:.3f}, {point.mixed} groups with a signal, {point.dead} dead"
            f"{'; update: ' + moved if moved else '; no update'}")  # fmt: skip
    return curve


def main() -> None:
    import tempfile

    import torch
    from rich.console import Console
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.bench_free_learning import WORKDIR
    from benchmarks.free_learning.results import BARRED_HARNESS
    from benchmarks.free_learning.seed_run import recorded_and_fine_tuned
    from components.core.storage import RunLayout, get_dir, open_store
    from components.rollout.tasks import load_task_set
    from components.trainer.sft_step import recorded_sessions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="the bench seed whose store to read")
    parser.add_argument("--iterations", type=int, default=2, help="updates (the bench's `iterations` less one)")
    parser.add_argument("--group", type=int, help="samples a task an update (default: rollout.samples_per_task)")
    parser.add_argument("--eval-samples", type=int, default=16, help="fresh samples a task for each pass rate")
    parser.add_argument("--set", default="", metavar="NAME=VALUE,...", help="changes of the config's `algorithm:`")
    parser.add_argument("--control", action="store_true", help="rewards shuffled within each group")
    parser.add_argument("--sampling-seed", type=int,
                        help="seeds sampling, shuffling and updates (default: the run's seed)")  # fmt: skip
    parser.add_argument("--workdir", type=Path, default=WORKDIR / BARRED_HARNESS)
    args = parser.parse_args()

    config = recorded_and_fine_tuned(args.seed, (args.workdir / f"seed-{args.seed}").resolve(), Console())
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    algorithm = config.algorithm.model_copy(update=parse_variant(args.set, config.algorithm))
    commands = {t.id: t.reference[0].tool_calls[0].shell for t in load_task_set(config.tasks.source) if t.reference}
    turns = first_turns(recorded_sessions(config, store)[0], commands)
    with tempfile.TemporaryDirectory() as tmp:
        get_dir(store, layout.sft_checkpoint(), Path(tmp) / "sft")
        tokenizer = AutoTokenizer.from_pretrained(Path(tmp) / "sft")
        model = AutoModelForCausalLM.from_pretrained(Path(tmp) / "sft", dtype=torch.float32)
    eos = model.generation_config.eos_token_id  # the checkpoint's own end-of-turn ids, as the engine stops on
    stop = set(eos if isinstance(eos, list) else [eos])

    def grade(task_id: str, ids: list[int]) -> float:
        return float(same_command(command_of(tokenizer.decode(ids)), commands[task_id]))

    seed = config.seed if args.sampling_seed is None else args.sampling_seed
    curve = train(
        model, turns, algorithm, grade, iterations=args.iterations, group=args.group or config.rollout.samples_per_task,
        eval_samples=args.eval_samples, max_new_tokens=config.harness.max_tokens, stop=stop,
        pad=tokenizer.pad_token_id, seed=seed, shuffle=args.control,
    )  # fmt: skip
    rates = " → ".join(f"{point.rate:.3f}" for point in curve)
    print(f"seed {args.seed}, {args.set or 'the config'}{', control' if args.control else ''}: {rates} "
          f"(rise {curve[-1].rate - curve[0].rate:+.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
