"""A scored iteration of any size in a store, written the way a run writes it: the prepare
step's plan, each rollout's outcome and recorded calls (the repo's own models), then the
real score step (``score_iteration``) for ``rewards.json`` and the metrics.

The viewer's benchmark opens a 1,000-rollout iteration made here; its tests make small
ones (paging, evaluations) the same way.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from components.core.config import EvaluationConfig, ExperimentConfig, load_config
from components.core.outcome import Outcome, RolloutStatus
from components.core.rollout_identity import group_id, make_rollout_id
from components.core.storage import ArtifactStore, run_layout
from components.core.trajectory import RecordedCall
from pipelines.state import RunState, write_state

REPO = Path(__file__).resolve().parents[2]


def synth_config(name: str, samples_per_task: int, evaluation: str | None = None) -> ExperimentConfig:
    """examples/quickstart.yaml renamed, with ``samples_per_task`` samples (and an evaluation id)."""
    config = load_config(REPO / "examples" / "quickstart.yaml")
    return config.model_copy(
        update={
            "name": name,
            "rollout": config.rollout.model_copy(update={"samples_per_task": samples_per_task}),
            "evaluation": EvaluationConfig(id=evaluation) if evaluation else None,
        }
    )


def synthesize_iteration(
    store: ArtifactStore, config: ExperimentConfig, tasks: int, iteration: int = 0, calls_per_rollout: int = 3, seed: int = 0
) -> list[str]:
    """Write iteration ``iteration`` of ``config``'s run (or evaluation) with ``tasks`` tasks of
    ``samples_per_task`` rollouts each, score it, and return the rollout ids."""
    from components.reward.step import score_iteration

    rng = random.Random(seed)
    layout = run_layout(config)
    samples = config.rollout.samples_per_task
    task_ids = [f"synth-task-{n:04d}" for n in range(tasks)]
    rollouts = [
        {"rollout_id": make_rollout_id(t, s), "task_id": t, "sample_index": s, "group_id": group_id(iteration, t), "deadline_s": 600}
        for t in task_ids
        for s in range(samples)
    ]
    plan = {"iteration": iteration, "seed": seed, "samples_per_task": samples, "tasks": task_ids, "rollouts": rollouts}
    if not store.exists(layout.state()):  # what marks a run in the store
        write_state(store, layout, RunState(last_committed_iteration=iteration, checkpoint=iteration + 1))
    for rollout in rollouts:
        rid = rollout["rollout_id"]
        calls = [_call(rid, n, rng) for n in range(calls_per_rollout)]
        store.put_bytes(layout.trajectory(iteration, rid), b"".join(c.model_dump_json().encode() + b"\n" for c in calls))
        passed = rng.random() < 0.4
        outcome = Outcome(
            rollout_id=rid, task_id=rollout["task_id"], sample_index=rollout["sample_index"], iteration=iteration,
            status=RolloutStatus.OK, reward=1.0 if passed else 0.0, passed=passed, num_calls=len(calls),
            duration_s=rng.uniform(5, 60), verifier_output="PASS" if passed else "FAIL: the file is not there",
        )  # fmt: skip
        store.put_bytes(layout.outcome(iteration, rid), outcome.model_dump_json().encode())
    store.put_bytes(layout.plan(iteration), json.dumps(plan, indent=2).encode() + b"\n")
    score_iteration(config, iteration, store)
    return [r["rollout_id"] for r in rollouts]


def _call(session: str, index: int, rng: random.Random) -> RecordedCall:
    prompt = [rng.randrange(1, 30000) for _ in range(400 + 200 * index)]
    completion = [rng.randrange(1, 30000) for _ in range(rng.randrange(20, 120))]
    messages = [{"role": "system", "content": "You are a coding agent. Use the tools."}]
    for n in range(index):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call-{n}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": f"ls step{n}"})}}]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"call-{n}", "content": f"file{n}.txt\n" * 20})
    messages.insert(1, {"role": "user", "content": "Create answer.txt holding the sum of the numbers in data.txt."})
    return RecordedCall(
        session_id=session, call_index=index, api="chat.completions", model="policy", policy_version="0",
        request={"model": "policy", "messages": messages},
        response={"choices": [{"message": {"role": "assistant", "content": "Running the next command."}, "finish_reason": "stop"}]},
        prompt_token_ids=prompt, completion_token_ids=completion,
        completion_logprobs=[-rng.random() for _ in completion], finish_reason="stop",
        started_at=1.7e9 + index, latency_ms=rng.uniform(50, 900), upstream_status=200,
    )  # fmt: skip
