"""Recorded calls plus rewards to a veRL ``DataProto`` (docs/trainer.md, "The batch").

The layout is the one veRL's own agent loop produces for multi-turn rollouts, so the
GPU trainer can consume the same file: ``prompts`` left-padded, ``responses``
right-padded, ``input_ids = prompts ++ responses``, ``response_mask`` 1 only on sampled
tokens. The GRPO advantage is computed once per rollout with veRL's
``compute_grpo_outcome_advantage`` and broadcast to that rollout's rows, so a rollout
split into several rows still counts once in its group's mean and std.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from components.core.config import AlgorithmConfig, EngineConfig
from components.core.outcome import RewardRecord
from components.core.storage import ArtifactStore, RunLayout
from components.core.trajectory import RecordedCall
from components.trainer.branches import BRANCH_KINDS
from components.trainer.capture_check import MISMATCH, Decode, flag_mismatches
from components.trainer.row_images import IMAGE_MISSING, ImagesOf, RowVision
from components.trainer.rows import BatchError, Row, merge_calls, split_row


_DEFAULT_CONTEXT = EngineConfig.model_fields["max_model_len"].default


class BatchStats(BaseModel):
    """What went into the batch and what was left out, and why."""

    rows: int = 0
    rollouts: int = 0  # usable rollouts in groups with signal
    merge_continuations: int = 0  # calls that continued a row (rows.merge_calls)
    merge_branches: dict[str, int] = dict.fromkeys(BRANCH_KINDS, 0)  # calls that started a branch row, by kind
    merge_breaks: int = 0  # calls that started a row for no known reason (branches.BREAK)
    superseded_calls: int = 0
    dropped_rows: int = 0  # calls that alone exceed the row limits (rows.split_row)
    dropped: dict[str, int] = {}  # dropped_rows by reason (rows.PROMPT_TOO_LONG, COMPLETION_TOO_LONG)
    split_rows: int = 0  # rows added by splitting merged rows longer than the limits
    trained_tokens: int = 0  # sampled (response_mask 1) tokens in the batch: what the update trains on
    forced_tokens: int = 0  # completion tokens the engine forced (choice mode's one-candidate turns): mask 0
    skipped_groups: int = 0  # all usable rewards equal: no signal
    no_baseline_groups: int = 0  # one usable rollout left of several: no GRPO baseline, masked whole
    unusable_rollouts: int = 0
    token_text_checked: int = 0  # plain-text calls whose ids were decoded and compared (capture_check.py)
    token_text_skipped: int = 0  # calls with tool calls or reasoning: not comparable as text
    token_text_mismatch: int = 0  # rollouts left out because their ids do not decode to their text
    mismatches: dict[str, str] = {}  # rollout id -> the first mismatching call

    def metrics(self) -> dict[str, float]:
        return {
            "batch/rows": float(self.rows),
            "batch/rollouts": float(self.rollouts),
            "batch/merge_breaks": float(self.merge_breaks),
            "batch/merge_continuations": float(self.merge_continuations),
            **{f"batch/merge_branches/{kind}": float(n) for kind, n in sorted(self.merge_branches.items())},
            "batch/dropped_rows": float(self.dropped_rows),
            **{f"batch/dropped/{reason}": float(n) for reason, n in sorted(self.dropped.items())},
            "batch/split_rows": float(self.split_rows),
            "batch/trained_tokens": float(self.trained_tokens),
            "batch/forced_tokens": float(self.forced_tokens),
            "batch/skipped_groups": float(self.skipped_groups),
            "batch/no_baseline_groups": float(self.no_baseline_groups),
            "batch/unusable_rollouts": float(self.unusable_rollouts),
            "batch/token_text_checked": float(self.token_text_checked),
            "batch/token_text_skipped": float(self.token_text_skipped),
            f"batch/unusable/{MISMATCH}": float(self.token_text_mismatch),
        }


def groups_with_signal(
    records: Sequence[RewardRecord], stats: BatchStats | None = None, *, keep_equal: bool = False
) -> list[RewardRecord]:
    """Usable records of groups whose rewards differ; all-equal groups have zero advantage.

    The one rule for which rollouts train: the batch uses it, and the learnability probe
    (components/trainer/learnability.py) predicts from it. ``stats`` counts what it left out.
    ``keep_equal`` keeps all-equal groups too: under pure distillation the signal is the
    teacher's, per token, whatever the rewards.
    """
    stats = stats if stats is not None else BatchStats()
    by_group: dict[str, list[RewardRecord]] = defaultdict(list)
    for record in records:
        if record.usable:
            by_group[record.group_id].append(record)
        else:
            stats.unusable_rollouts += 1
    planned: dict[str, int] = defaultdict(int)
    for record in records:
        planned[record.group_id] += 1
    kept = []
    for gid, members in by_group.items():
        if len(members) == 1 and planned[gid] > 1:
            # The others were masked (here or by scoring): no baseline to compare this one with.
            stats.no_baseline_groups += 1
            stats.unusable_rollouts += 1
            continue
        # A task sampled once lands here: veRL would give it mean 0, std 1, i.e. its raw reward.
        if len({m.reward for m in members}) == 1 and not keep_equal:
            stats.skipped_groups += 1
        else:
            kept.extend(members)
    return sorted(kept, key=lambda r: r.rollout_id)


def rollout_advantages(records: Sequence[RewardRecord], norm_adv_by_std: bool) -> dict[str, float]:
    """GRPO advantage per rollout, from veRL's own estimator with one length-1 "response" each."""
    import numpy as np
    import torch
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    if not records:
        return {}
    scores = torch.tensor([[r.reward] for r in records], dtype=torch.float32)
    advantages, _ = compute_grpo_outcome_advantage(
        token_level_rewards=scores,
        response_mask=torch.ones_like(scores),
        index=np.array([r.group_id for r in records], dtype=object),
        norm_adv_by_std_in_grpo=norm_adv_by_std,
    )
    return {r.rollout_id: float(a) for r, a in zip(records, advantages[:, 0].tolist())}


def _collect_rows(
    calls_by_rollout: Mapping[str, Sequence[RecordedCall]],
    records: Sequence[RewardRecord],
    algorithm: AlgorithmConfig,
    limits: tuple[int, int],
    stats: BatchStats,
) -> list[Row]:
    rows = []
    for record in records:
        calls = calls_by_rollout.get(record.rollout_id)
        if calls is None:
            raise BatchError(
                f"rollout {record.rollout_id} is usable but has no trajectory; "
                "pass the trajectory folder the rewards were scored from"
            )
        merged, counts = merge_calls(record.rollout_id, calls, algorithm.temperature)
        stats.merge_continuations += counts.continuations
        stats.merge_breaks += counts.breaks
        for kind, n in counts.branches.items():
            stats.merge_branches[kind] = stats.merge_branches.get(kind, 0) + n
        stats.superseded_calls += counts.superseded
        for row in merged:
            stats.forced_tokens += row.forced_tokens()
            pieces, split = split_row(row, *limits)
            stats.split_rows += split.splits
            for reason, count in split.dropped.items():
                stats.dropped[reason] = stats.dropped.get(reason, 0) + count
                stats.dropped_rows += count
            rows.extend(pieces)
    return rows


def _with_images(rows: list[Row], vision: RowVision, images_of: ImagesOf, stats: BatchStats) -> tuple[list[Row], list[dict]]:
    """The rows that can train with their images, and each one's ``multi_modal_inputs``;
    the others are dropped, counted by reason (row_images.py)."""
    kept, inputs = [], []
    for row in rows:
        try:
            found = vision.inputs(row.tokens(), images_of(row.rollout_id, row.calls[-1]))
        except (OSError, ValueError):  # an image the store lacks or that is not the recorded one
            found = IMAGE_MISSING
        if isinstance(found, str):
            stats.dropped[found] = stats.dropped.get(found, 0) + 1
            stats.dropped_rows += 1
            continue
        kept.append(row)
        inputs.append(found)
    return kept, inputs


def _pad(seqs: Sequence[Sequence[float]], width: int, value: float, *, left: bool, dtype: object) -> object:
    import torch

    out = torch.full((len(seqs), width), value, dtype=dtype)
    for i, seq in enumerate(seqs):
        if seq:
            values = torch.tensor(seq, dtype=dtype)
            if left:
                out[i, width - len(seq) :] = values
            else:
                out[i, : len(seq)] = values
    return out


def row_tensors(rows: Sequence[Row], pad_token_id: int) -> dict[str, object]:
    """veRL's row layout of ``rows``: prompts left-padded, responses right-padded, their masks,
    position ids and recorded log-probs; what RL and SFT batches share."""
    import torch
    from verl.utils.model import compute_position_id_with_mask

    prompt_width = max((len(r.prompt) for r in rows), default=0)
    response_width = max((len(r.response) for r in rows), default=0)
    prompts = _pad([r.prompt for r in rows], prompt_width, pad_token_id, left=True, dtype=torch.long)
    responses = _pad([r.response for r in rows], response_width, pad_token_id, left=False, dtype=torch.long)
    prompt_present = _pad([[1] * len(r.prompt) for r in rows], prompt_width, 0, left=True, dtype=torch.long)
    response_present = _pad([[1] * len(r.response) for r in rows], response_width, 0, left=False, dtype=torch.long)
    attention_mask = torch.cat([prompt_present, response_present], dim=1)
    return {
        "prompts": prompts,
        "responses": responses,
        "input_ids": torch.cat([prompts, responses], dim=1),
        "attention_mask": attention_mask,
        "position_ids": compute_position_id_with_mask(attention_mask),
        "response_mask": _pad([r.response_mask for r in rows], response_width, 0, left=False, dtype=torch.long),
        "rollout_log_probs": _pad([r.logprobs for r in rows], response_width, 0.0, left=False, dtype=torch.float32),
    }


def _last_sampled(row: Row) -> int:
    return max(i for i, sampled in enumerate(row.response_mask) if sampled)


def _to_dataproto(
    rows: Sequence[Row],
    records: Mapping[str, RewardRecord],
    advantages: Mapping[str, float],
    temperature: float,
    pad_token_id: int,
    stats: BatchStats,
    vision: tuple[RowVision, list[dict]] | None = None,
) -> object:
    import numpy as np
    import torch
    from verl import DataProto

    tensors = row_tensors(rows, pad_token_id)
    response_mask, response_width = tensors["response_mask"], tensors["responses"].shape[1]
    # The reward sits on each row's last sampled token (a forced turn may follow it).
    scores = torch.zeros((len(rows), response_width), dtype=torch.float32)
    for i, row in enumerate(rows):
        scores[i, _last_sampled(row)] = records[row.rollout_id].reward
    row_advantage = torch.tensor([[advantages[r.rollout_id]] for r in rows], dtype=torch.float32)
    non_tensors = {}
    if vision is not None:  # veRL's multimodal layout: (rows, 4, width) positions and each row's image inputs
        row_vision, inputs = vision
        input_ids, attention_mask = tensors["input_ids"], tensors["attention_mask"]
        tensors["position_ids"] = torch.stack(
            [row_vision.positions(input_ids[i], attention_mask[i], inputs[i]) for i in range(len(rows))]
        ) if rows else torch.zeros((0, 4, input_ids.shape[1]), dtype=torch.long)  # fmt: skip
        non_tensors["multi_modal_inputs"] = np.array(inputs, dtype=object)
    tensors |= {
        "token_level_scores": scores,
        "token_level_rewards": scores.clone(),  # no KL-in-reward: veRL copies scores to rewards
        "advantages": row_advantage.reshape(len(rows), 1).expand(len(rows), response_width) * response_mask,
    }
    return DataProto.from_dict(
        tensors=tensors,
        non_tensors={
            "uid": np.array([records[r.rollout_id].group_id for r in rows], dtype=object),
            "rollout_id": np.array([r.rollout_id for r in rows], dtype=object),
            **non_tensors,
        },
        meta_info={"temperature": temperature, "openforge_batch_stats": stats.model_dump()},
    )


def build_batch(
    calls_by_rollout: Mapping[str, Sequence[RecordedCall]],
    records: Sequence[RewardRecord],
    algorithm: AlgorithmConfig,
    pad_token_id: int = 0,
    decode: Decode | None = None,
    max_model_len: int = _DEFAULT_CONTEXT,
    vision: RowVision | None = None,
    images_of: ImagesOf | None = None,
) -> tuple[object, BatchStats]:
    """The veRL DataProto of one iteration and its stats; zero rows when no group has signal.

    ``calls_by_rollout`` maps rollout ids to their recorded calls; only usable rollouts
    of groups whose rewards differ need to be present. With ``decode`` (the policy's
    tokenizer), rollouts whose token ids do not decode to their text are left out
    (capture_check.py); without it that check is skipped (token_text_checked stays 0).
    ``max_model_len`` (engine.max_model_len) stands in for unset row limits. With
    ``vision`` (a vision-language policy), each row gets its images from ``images_of``
    (rollout id, call index -> that call's prompt images) and veRL's multimodal layout.
    """
    stats = BatchStats()
    if decode is not None:
        records, counts, problems = flag_mismatches(calls_by_rollout, records, decode)
        stats.token_text_checked, stats.token_text_skipped = counts["checked"], counts["skipped"]
        stats.token_text_mismatch, stats.mismatches = len(problems), problems
    distillation = algorithm.distillation
    trained = groups_with_signal(records, stats, keep_equal=distillation is not None and not distillation.verifier_reward)
    stats.rollouts = len(trained)
    advantages = rollout_advantages(trained, algorithm.norm_adv_by_std)
    rows = _collect_rows(calls_by_rollout, trained, algorithm, algorithm.row_limits(max_model_len), stats)
    with_images = None
    if vision is not None:
        if images_of is None:
            raise BatchError("a vision-language policy's batch needs the rollouts' images (images_of)")
        rows, inputs = _with_images(rows, vision, images_of, stats)
        with_images = (vision, inputs)
    stats.rows = len(rows)
    stats.trained_tokens = sum(row.sampled_tokens() for row in rows)
    data = _to_dataproto(
        rows, {r.rollout_id: r for r in trained}, advantages, algorithm.temperature, pad_token_id, stats, with_images
    )
    return data, stats


def read_stored_batch(store: ArtifactStore, layout: RunLayout, iteration: int, scratch: Path) -> Any:
    """The DataProto the train step stored for ``iteration`` (``layout.batch``), through a file in
    ``scratch``: DataProto reads only from disk."""
    from verl import DataProto

    path = scratch / "batch.pt"
    path.write_bytes(store.get_bytes(layout.batch(iteration)))
    return DataProto.load_from_disk(path)
