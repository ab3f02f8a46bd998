"""What the viewer reads from a run's store: a few whole files per page, never a listing of
every rollout, so a 1,000-rollout iteration costs its plan, rewards, metrics and analytics.

Each function names the store keys it reads (components/core/storage.py, ``RunLayout``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.analytics import IterationAnalytics, read_analytics
from components.core.metrics import read_metrics
from components.core.storage import ArtifactStore, RunLayout, StorageError
from components.core.trajectory import RecordedCall


@dataclass(frozen=True)
class RolloutLine:
    """One rollout as the iteration page lists it."""

    rollout_id: str
    task_id: str
    group_id: str
    reward: float | None  # None: not scored yet
    status: str
    usable: bool


@dataclass(frozen=True)
class IterationView:
    iteration: int
    rollouts: list[RolloutLine]
    metrics: dict[str, float]
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # task id -> its TaskStats from rewards.json
    analytics: IterationAnalytics | None = None  # written at commit: None before it, and for an evaluation

    def by_task(self) -> dict[str, list[RolloutLine]]:
        groups: dict[str, list[RolloutLine]] = {}
        for line in self.rollouts:
            groups.setdefault(line.task_id, []).append(line)
        return groups


@dataclass
class TrainingRow:
    """One batch row of a rollout: each token with its role and recorded logprob."""

    tokens: list[str]
    roles: list[str]  # "prompt" (context), "context" (response, not sampled), "trained"
    logprobs: list[float | None]
    advantage: float
    kind: str | None = None

    @property
    def trained(self) -> int:
        return self.roles.count("trained")


@dataclass
class TrainingView:
    rows: list[TrainingRow] = field(default_factory=list)
    in_batch: bool = True  # False: the rollout's group had no signal or it was unusable


def run_names(store: ArtifactStore) -> list[str]:
    """Runs in the store: each has ``<name>/state.json`` (one listing of the top level, one
    check per folder: never a listing of every key the runs hold)."""
    return [name for name in store.children("") if store.exists(f"{name}/state.json")]


def iterations(store: ArtifactStore, layout: RunLayout) -> list[int]:
    """The run's (or evaluation's) iterations that have a plan (``.../iterations/K/plan.json``)."""
    folder = layout.plan(0).removesuffix("/0/plan.json")  # <scope>/iterations
    numbered = sorted(int(k) for k in store.children(folder) if k.isdigit())
    return [k for k in numbered if store.exists(layout.plan(k))]


def evaluations(store: ArtifactStore, name: str) -> list[str]:
    """The run's evaluations that have a plan (``<name>/evals/<id>/iterations/K/plan.json``)."""
    return [e for e in store.children(f"{name}/evals") if iterations(store, RunLayout(name, e))]


def iteration_metrics(store: ArtifactStore, layout: RunLayout, iteration: int) -> dict[str, float]:
    return read_metrics(store, layout.metrics(iteration))


def eval_summary(store: ArtifactStore, layout: RunLayout) -> dict[str, Any] | None:
    """What the evaluation's report step wrote (``summary.json``); None before it ran."""
    key = layout.eval_summary()
    return json.loads(store.get_bytes(key)) if store.exists(key) else None


def iteration_view(store: ArtifactStore, layout: RunLayout, iteration: int) -> IterationView:
    """Plan, rewards, metrics and analytics of iteration ``iteration``: four files, whatever the rollout count."""
    plan = json.loads(store.get_bytes(layout.plan(iteration)))
    rewards = json.loads(store.get_bytes(layout.rewards(iteration))) if store.exists(layout.rewards(iteration)) else {}
    scored = {r["rollout_id"]: r for r in rewards.get("records", [])}
    lines = []
    for planned in plan["rollouts"]:
        record = scored.get(planned["rollout_id"], {})
        lines.append(
            RolloutLine(
                rollout_id=planned["rollout_id"],
                task_id=planned["task_id"],
                group_id=planned["group_id"],
                reward=record.get("reward"),
                status=record.get("status", "not scored"),
                usable=bool(record.get("usable", False)),
            )
        )
    tasks = {t["task_id"]: t for t in rewards.get("tasks", [])}
    metrics = read_metrics(store, layout.metrics(iteration))
    return IterationView(iteration, lines, metrics, tasks, read_analytics(store, layout, iteration))


def rollout_calls(store: ArtifactStore, layout: RunLayout, iteration: int, rollout_id: str) -> list[RecordedCall]:
    key = layout.trajectory(iteration, rollout_id)
    if not store.exists(key):
        return []
    return [RecordedCall.model_validate_json(line) for line in store.get_bytes(key).splitlines() if line.strip()]


def rollout_outcome(store: ArtifactStore, layout: RunLayout, iteration: int, rollout_id: str) -> dict[str, Any] | None:
    key = layout.outcome(iteration, rollout_id)
    return json.loads(store.get_bytes(key)) if store.exists(key) else None


def image_bytes(store: ArtifactStore, layout: RunLayout, iteration: int, file_name: str) -> bytes:
    """A stored screenshot of the iteration (``images/<sha256>.<ext>``); StorageError when missing."""
    if "/" in file_name or file_name.startswith("."):
        raise StorageError(f"{file_name!r} is not an image file name")
    return store.get_bytes(f"{layout.images(iteration)}/{file_name}")


@dataclass
class IterationBatch:
    """An iteration's batch and its checkpoint's tokenizer, loaded once for every rollout's training view."""

    batch: Any  # verl DataProto, or None when the iteration has no batch yet
    decode: Any  # token ids -> each token's text


def load_batch(store: ArtifactStore, layout: RunLayout, iteration: int, scratch: Path) -> IterationBatch:
    """``batch.pt`` of the iteration, decoded with checkpoint ``iteration``'s tokenizer (the one it served)."""
    if not store.exists(layout.batch(iteration)):
        return IterationBatch(None, None)
    from components.trainer.batch import read_stored_batch

    batch = read_stored_batch(store, layout, iteration, scratch)
    return IterationBatch(batch, _token_text(store, layout, iteration, scratch / "tokenizer"))


def training_view(loaded: IterationBatch, rollout_id: str) -> TrainingView:
    """The rollout's rows of the batch: each token with its role, logprob and the row's advantage."""
    batch = loaded.batch
    rows = [i for i, rid in enumerate(batch.non_tensor_batch.get("rollout_id", [])) if rid == rollout_id] if batch else []
    if not rows:
        return TrainingView(in_batch=False)
    view = TrainingView()
    prompt_width = batch.batch["prompts"].shape[1]
    for i in rows:
        prompt = batch.batch["prompts"][i][batch.batch["attention_mask"][i, :prompt_width].bool()].tolist()
        width = int(batch.batch["attention_mask"][i, prompt_width:].sum())
        response = batch.batch["responses"][i, :width].tolist()
        mask = batch.batch["response_mask"][i, :width].tolist()
        logprobs = batch.batch["rollout_log_probs"][i, :width].tolist()
        advantage = float(batch.batch["advantages"][i][batch.batch["response_mask"][i].bool()].mean()) if any(mask) else 0.0
        view.rows.append(
            TrainingRow(
                tokens=loaded.decode(prompt + response),
                roles=["prompt"] * len(prompt) + ["trained" if m else "context" for m in mask],
                logprobs=[None] * len(prompt) + [lp if m else None for lp, m in zip(logprobs, mask)],
                advantage=advantage,
            )
        )
    return view


def _token_text(store: ArtifactStore, layout: RunLayout, iteration: int, dest: Path) -> Any:
    """Each token id as its text, by the tokenizer of the checkpoint the iteration served."""
    from transformers import AutoTokenizer

    prefix = layout.checkpoint(iteration)
    for key in store.list(prefix + "/"):
        file = key[len(prefix) + 1 :]
        if file.startswith(("tokenizer", "special_tokens", "vocab", "merges", "chat_template")):
            dest.mkdir(parents=True, exist_ok=True)
            (dest / file).write_bytes(store.get_bytes(key))
    tokenizer = AutoTokenizer.from_pretrained(dest)
    return lambda ids: [tokenizer.decode([t]) for t in ids]
