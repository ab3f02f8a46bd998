"""Supervised fine-tuning on recorded sessions: the cold start before RL (docs/trainer.md, "SFT").

The student learns to write what the recorded model wrote, in the rows the RL update
trains on (``rows.imitation_rows``: the same prefix merge, prompts and tool output as
context with mask 0), every completion token a target. The loss is the targets' mean
negative log-likelihood, computed by veRL's own ``sft_loss`` (what its SFT trainer
minimises); the forward passes, micro-batches and AdamW are the CPU update's. Whole
sessions are held out for validation, and the epoch with the lowest validation loss is
the one kept: later epochs that only memorise the training sessions are undone.
"""

from __future__ import annotations

import copy
import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from components.core.config import AlgorithmConfig
from components.core.rollout_identity import parse_rollout_id
from components.core.trajectory import RecordedCall
from components.trainer.batch import row_tensors
from components.trainer.cpu_update import actor_config, build_optimizer, micro_batches, response_logits
from components.trainer.rows import Row, imitation_rows, split_row


class SftError(ValueError):
    """Recorded sessions SFT cannot learn from; the message names the problem and the fix."""


class SftEpoch(BaseModel):
    epoch: int
    loss: float
    token_accuracy: float
    val_loss: float | None = None
    val_token_accuracy: float | None = None

    def summary(self) -> str:
        held = "" if self.val_loss is None else f", held-out loss {self.val_loss:.4f} accuracy {self.val_token_accuracy or 0:.3f}"
        return f"loss {self.loss:.4f}, token accuracy {self.token_accuracy:.3f}{held}"


class SftReport(BaseModel):
    """What the fine-tuning saw and which epoch it kept."""

    sessions: int
    held_out_sessions: list[str]
    rows: int
    target_tokens: int
    held_out_tokens: int
    epochs: list[SftEpoch]
    chosen_epoch: int  # 1-based; the lowest validation loss, else the last epoch
    left_out: dict[str, int] = {}  # recorded sessions not learned from, by reason (sft_step.py)

    def metrics(self) -> list[dict[str, float]]:
        """Per epoch, the ``sft/*`` metrics logged to MLflow (step = epoch)."""
        out = []
        for e in self.epochs:
            row = {"sft/loss": e.loss, "sft/token_accuracy": e.token_accuracy}
            if e.val_loss is not None:
                row |= {"sft/val_loss": e.val_loss, "sft/val_token_accuracy": e.val_token_accuracy or 0.0}
            out.append(row)
        return out


def split_sessions(session_ids: Sequence[str], held_out: float, seed: int) -> tuple[list[str], list[str]]:
    """(training, held-out) sessions: a share of whole sessions chosen by a seeded hash, so a
    session's rows never sit on both sides and the same sessions always split the same way.

    A task's last session stays in training: held out, its commands (its file names) would be
    ones the student never saw, and RL would find the task dead. A hash alone holds out a
    task's one passed recording a share of the time. Sessions whose key names no task
    (``<iteration>/<rollout id>``) count as a task each."""
    ranked = sorted(session_ids, key=lambda sid: hashlib.sha256(f"{seed}/{sid}".encode()).hexdigest())
    count = round(len(ranked) * held_out)
    if held_out > 0 and len(ranked) > 1:
        count = min(max(count, 1), len(ranked) - 1)  # something on each side
    else:
        count = 0
    left = Counter(map(task_of, ranked))
    held: list[str] = []
    for sid in ranked:
        if len(held) < count and left[task := task_of(sid)] > 1:
            held.append(sid)
            left[task] -= 1
    if count and not held:  # one session a task: something on each side still
        held = ranked[:1]
    return sorted(set(ranked) - set(held)), sorted(held)


def held_out_shortfall(sessions: int, held: int, share: float) -> str | None:
    """Why the epoch is chosen on far fewer held-out sessions than ``share`` asks (half or
    fewer), or None: with one session a task, ``split_sessions`` can hold out almost nothing."""
    asked = round(sessions * share)
    if share <= 0 or held * 2 > asked:
        return None
    return (
        f"SFT held out {held} of {sessions} sessions where sft.held_out {share} asks for {asked}: a task's last "
        "session stays in training and most tasks have one, so the epoch is chosen on little held-out data. "
        "Record more sessions a task (`openforge record --samples N`) for a firmer choice"
    )


def task_of(session_id: str) -> str:
    """The task of a recorded session's key (``<iteration>/<rollout id>``); the key itself if it names none."""
    try:
        return parse_rollout_id(session_id.rsplit("/", 1)[-1])[0]
    except ValueError:
        return session_id


def sft_rows(calls_by_session: Mapping[str, Sequence[RecordedCall]], limits: tuple[int, int]) -> list[Row]:
    """Every session's imitation rows within the row limits (split at call boundaries as RL rows)."""
    rows = []
    for session_id in sorted(calls_by_session):
        merged, _ = imitation_rows(session_id, calls_by_session[session_id])
        for row in merged:
            rows.extend(split_row(row, *limits)[0])
    return rows


def sft_update(
    model: Any,
    calls_by_session: Mapping[str, Sequence[RecordedCall]],
    settings: AlgorithmConfig,
    *,
    max_epochs: int,
    held_out: float,
    seed: int,
    pad_token_id: int,
    max_model_len: int,
    on_epoch: Callable[[SftEpoch], None] | None = None,
) -> SftReport:
    """Fine-tune ``model`` in place on the sessions; it ends with the chosen epoch's weights.
    ``on_epoch`` sees each epoch as it ends (the step logs it: a long fine-tuning shows progress)."""
    import torch

    if not calls_by_session:
        raise SftError("no recorded session to learn from; record some first (openforge eval, or a run's iterations)")
    train_ids, held_ids = split_sessions(list(calls_by_session), held_out, seed)
    limits = settings.row_limits(max_model_len)
    train_rows = sft_rows({s: calls_by_session[s] for s in train_ids}, limits)
    held_rows = sft_rows({s: calls_by_session[s] for s in held_ids}, limits)
    if not train_rows:
        raise SftError(f"the {len(train_ids)} training sessions hold no completion to imitate")
    torch.manual_seed(seed)
    optimizer = build_optimizer(model, settings)
    train, held = row_tensors(train_rows, pad_token_id), row_tensors(held_rows, pad_token_id) if held_rows else None
    epochs, best = [], None
    for epoch in range(1, max_epochs + 1):
        model.train()
        loss, accuracy = _pass(model, train, settings, optimizer)
        model.eval()
        record = SftEpoch(epoch=epoch, loss=loss, token_accuracy=accuracy)
        if held is not None:
            with torch.no_grad():
                record.val_loss, record.val_token_accuracy = _pass(model, held, settings, None)
            if best is None or record.val_loss < best[0]:
                best = (record.val_loss, epoch, copy.deepcopy(model.state_dict()))
        epochs.append(record)
        if on_epoch is not None:
            on_epoch(record)
    chosen = max_epochs
    if best is not None:
        chosen = best[1]
        model.load_state_dict(best[2])
    return SftReport(
        sessions=len(calls_by_session),
        held_out_sessions=held_ids,
        rows=len(train_rows),
        target_tokens=int(train["response_mask"].sum()),
        held_out_tokens=int(held["response_mask"].sum()) if held is not None else 0,
        epochs=epochs,
        chosen_epoch=chosen,
    )


def _pass(model: Any, batch: dict[str, Any], settings: AlgorithmConfig, optimizer: Any) -> tuple[float, float]:
    """One pass over ``batch``: (mean target NLL, token accuracy); with ``optimizer``, an AdamW
    step per micro-batch (SFT has no reason to wait for the whole batch, as the policy update does)."""
    import torch
    from verl.utils.torch_functional import logprobs_from_logits

    clip = actor_config(settings, 1).optim.clip_grad
    total, correct, tokens = 0.0, 0, int(batch["response_mask"].sum())
    for micro in micro_batches(batch, settings.micro_batch_size, settings.micro_batch_tokens):
        logits = response_logits(model, micro, temperature=1.0)
        mask = micro["response_mask"].to(torch.bool)
        loss = _sft_loss(logprobs_from_logits(logits, micro["responses"]), micro["response_mask"])
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if torch.isfinite(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=clip)):
                optimizer.step()
        total += float(loss.detach()) * int(mask.sum())
        correct += int(((logits.argmax(dim=-1) == micro["responses"]) & mask).sum())
    return total / tokens, correct / tokens


def _sft_loss(log_prob: Any, response_mask: Any) -> Any:
    """veRL's own SFT loss (what its SFT trainer minimises) of one micro-batch, right-padded rows."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.utils.dataset.dataset_utils import DatasetPadMode
    from verl.workers.utils.losses import sft_loss

    data = TensorDict({"response_mask": response_mask}, batch_size=[])
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=int(response_mask.sum()))
    tu.assign_non_tensor(data, pad_mode=DatasetPadMode.RIGHT)
    return sft_loss(None, {"log_probs": log_prob}, data)[0]
