"""On-policy distillation: a teacher's log-probs of the student's sampled tokens, and the CPU update's advantage.

The student samples through the harness as in RL, so the batch's rows are its own tokens.
A teacher that shares its tokenizer, served by an OpenAI-compatible engine (vLLM, or the
dev engine), scores each row with ``prompt_logprobs``: its log-probability of every
token after the ones before it. Per sampled token the reverse-KL estimate comes from
veRL's own ``kl_penalty``, as in veRL's distillation loss with ``use_policy_gradient``
(``verl.trainer.distillation.losses``); its negation is the token's advantage, beside
the verifier's GRPO advantage or alone (``DistillationConfig``). The CPU update then
trains on the batch's ``advantages`` as it always does; the veRL backend instead gives the
teacher's log-probs to veRL's distillation loss itself (``verl_trainer.distillation_inputs``;
docs/trainer.md, "On-policy distillation").
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.core.distillation_config import DistillationConfig

_CONNECT_TIMEOUT_S = 30.0


class DistillationError(ValueError):
    """A teacher that cannot serve as one, or an answer the batch cannot use; the message names the fix."""


def check_same_tokenizer(student: str | Path | Any, teacher: str | Path | Any) -> None:
    """Refuse a teacher whose tokenizer is not the student's; each is a model folder or a loaded tokenizer.

    "The same" is what scoring by token id needs: an identical token-to-id vocabulary (added
    tokens included) and the same special-token roles (end of turn, padding, ...). The chat
    template is not compared: the teacher scores the ids the student's template produced
    and never applies its own.
    """
    student_tokens, teacher_tokens = _tokenizer(student), _tokenizer(teacher)
    problems = []
    student_vocab, teacher_vocab = student_tokens.get_vocab(), teacher_tokens.get_vocab()
    if student_vocab != teacher_vocab:
        student_ids = {i: token for token, i in student_vocab.items()}
        teacher_ids = {i: token for token, i in teacher_vocab.items()}
        differing = sorted(i for i in student_ids.keys() | teacher_ids.keys() if student_ids.get(i) != teacher_ids.get(i))
        first = differing[0]
        problems.append(
            f"{len(differing)} token ids differ (vocabularies of {len(student_vocab)} and {len(teacher_vocab)} tokens; "
            f"id {first} is {student_ids.get(first)!r} for the student, {teacher_ids.get(first)!r} for the teacher)"
        )
    if student_tokens.special_tokens_map != teacher_tokens.special_tokens_map:
        problems.append(
            f"special tokens differ (student {student_tokens.special_tokens_map}, "
            f"teacher {teacher_tokens.special_tokens_map})"
        )
    if problems:
        raise DistillationError(
            "the teacher's tokenizer is not the student's: " + "; ".join(problems) + ". On-policy distillation "
            "needs a teacher that shares the student's tokenizer, because the teacher scores the student's token "
            "ids and a log-prob of an id means the same token only when both read it alike. Choose a teacher of "
            "the student's model family whose tokenizer files match"
        )


def _tokenizer(source: str | Path | Any) -> Any:
    if not isinstance(source, (str, Path)):
        return source
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source)


def teacher_token_logprobs(
    url: str,
    model: str,
    sequences: Sequence[Sequence[int]],
    prompt_lengths: Sequence[int],
    *,
    concurrency: int = 8,
    timeout_s: float = 600.0,
) -> list[list[float]]:
    """The teacher's log-prob of each token of ``sequences[i][prompt_lengths[i]:]`` (each row's response).

    One ``/v1/completions`` request per row: ``prompt`` the row's whole token ids, ``max_tokens``
    1, ``prompt_logprobs`` 0 (each prompt token alone, vLLM's shape). ``url`` is the teacher
    engine's root (``/v1`` may follow); ``model`` the name it serves. At most ``concurrency``
    requests are in flight, so a vLLM teacher batches them; ``timeout_s`` bounds one answer.
    """
    if len(sequences) != len(prompt_lengths):
        raise ValueError(f"{len(sequences)} sequences but {len(prompt_lengths)} prompt lengths")
    endpoint = url.rstrip("/").removesuffix("/v1") + "/v1/completions"
    return asyncio.run(_score_rows(endpoint, model, sequences, prompt_lengths, concurrency, timeout_s))


async def _score_rows(
    endpoint: str,
    model: str,
    sequences: Sequence[Sequence[int]],
    prompt_lengths: Sequence[int],
    concurrency: int,
    timeout_s: float,
) -> list[list[float]]:
    import aiohttp

    # sock_read, not total: a request waiting for a free connection is not the teacher being slow.
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT_S, sock_read=timeout_s)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), timeout=timeout) as session:
        try:
            async with asyncio.TaskGroup() as group:  # the first failure cancels the rest
                rows = [
                    group.create_task(_score_row(session, endpoint, model, list(ids), start, timeout_s))
                    for ids, start in zip(sequences, prompt_lengths)
                ]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
    return [row.result() for row in rows]


async def _score_row(
    session: Any, endpoint: str, model: str, ids: list[int], start: int, timeout_s: float
) -> list[float]:
    import aiohttp

    body = {"model": model, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0}
    try:
        async with session.post(endpoint, json=body) as response:
            status, text = response.status, await response.text()
    except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
        raise DistillationError(
            f"the teacher at {endpoint} is unreachable ({exc or type(exc).__name__}); start the teacher's serve "
            "daemon, or fix the teacher's URL"
        ) from None
    except asyncio.TimeoutError:
        raise DistillationError(
            f"the teacher at {endpoint} did not answer a {len(ids)}-token row within {timeout_s:.0f} s; "
            "give it more time (timeout_s) or more capacity"
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise DistillationError(
            f"the connection to the teacher at {endpoint} broke before its answer ended ({exc or type(exc).__name__}); "
            "see the teacher's log (a crash, or out of memory on a long row)"
        ) from None
    if status != 200:
        raise DistillationError(
            f"the teacher at {endpoint} answered HTTP {status} to a {len(ids)}-token row: {text[:500]}. It must "
            "accept token-id prompts with prompt_logprobs, serve the model name asked for, and hold each row plus "
            "one token in its context (max_model_len above the student's)"
        )
    return _response_logprobs(endpoint, text, ids, start)


def _response_logprobs(endpoint: str, text: str, ids: list[int], start: int) -> list[float]:
    """The teacher's log-prob of ``ids[start:]`` from one completions answer (vLLM's ``prompt_logprobs``)."""
    try:
        choices = json.loads(text).get("choices") or [{}]
        scored = choices[0].get("prompt_logprobs")
    except (ValueError, AttributeError):
        raise DistillationError(
            f"the teacher at {endpoint} answered something other than a completion: {text[:300]}"
        ) from None
    if scored is None:
        raise DistillationError(
            f"the teacher at {endpoint} returned no prompt_logprobs; serve the teacher with an engine that supports "
            "prompt_logprobs on /v1/completions (vLLM, or the dev engine)"
        )
    if not isinstance(scored, list) or len(scored) != len(ids):
        count = len(scored) if isinstance(scored, list) else type(scored).__name__
        raise DistillationError(
            f"the teacher at {endpoint} returned {count} prompt_logprobs for a {len(ids)}-token row; it must score "
            "the token ids exactly as sent (no added BOS token, no re-tokenization)"
        )
    logprobs = []
    for position in range(start, len(ids)):
        entry = scored[position]
        value = entry.get(str(ids[position])) if isinstance(entry, dict) else None
        logprob = value.get("logprob") if isinstance(value, dict) else None
        if not isinstance(logprob, (int, float)) or math.isnan(logprob):
            raise DistillationError(
                f"the teacher at {endpoint} gave no log-prob for token {ids[position]} at position {position} of the "
                f"row (entry {entry!r}); its prompt_logprobs must hold each prompt token's own log-prob, as vLLM's do"
            )
        logprobs.append(float(logprob))
    return logprobs


def _row_sequences(batch: Any) -> tuple[list[list[int]], list[int]]:
    """Each batch row's tokens, prompt then response with the padding dropped, and its prompt length."""
    prompt_width = batch["prompts"].shape[1]
    sequences, prompt_lengths = [], []
    for ids, present in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist()):
        tokens = [token for token, real in zip(ids, present) if real]
        sequences.append(tokens)
        prompt_lengths.append(sum(present[:prompt_width]))
    return sequences, prompt_lengths


def teacher_log_probs_of_batch(data: Any, url: str, model: str, **options: Any) -> Any:
    """The teacher's log-prob of each response token of the DataProto ``data``, (rows, response width);
    0.0 on padding. ``options`` go to ``teacher_token_logprobs``."""
    import torch

    sequences, prompt_lengths = _row_sequences(data.batch)
    scored = teacher_token_logprobs(url, model, sequences, prompt_lengths, **options)
    out = torch.zeros_like(data.batch["rollout_log_probs"])
    for row, values in enumerate(scored):
        out[row, : len(values)] = torch.tensor(values, dtype=out.dtype)
    return out


def distillation_advantages(
    student_log_probs: Any,
    teacher_log_probs: Any,
    response_mask: Any,
    reward_advantages: Any,
    config: DistillationConfig,
) -> Any:
    """Per-token advantage, (rows, response width): the teacher's term, with the reward's when configured.

    teacher_term = -clamp(kl_penalty(student, teacher, estimator), ±clamp), veRL's own
    estimator (k1: log p_teacher - log p_student); then reward_advantages + weight *
    teacher_term (``verifier_reward``) or teacher_term alone, zero where ``response_mask``
    is 0 (prompt context, tool output, forced tokens: the policy did not choose them).
    """
    teacher_term = -_reverse_kl(student_log_probs, teacher_log_probs, config)
    combined = reward_advantages + config.weight * teacher_term if config.verifier_reward else teacher_term
    return combined * response_mask


def _reverse_kl(student_log_probs: Any, teacher_log_probs: Any, config: DistillationConfig) -> Any:
    """veRL's per-token estimate of KL(student || teacher), bounded by ``config.clamp`` as veRL's
    ``loss_max_clamp`` bounds it: finite even where the teacher's log-prob is -inf."""
    from verl.trainer.ppo.core_algos import kl_penalty

    estimate = kl_penalty(logprob=student_log_probs, ref_logprob=teacher_log_probs, kl_penalty=config.estimator)
    return estimate.clamp(-config.clamp, config.clamp)


def apply_distillation(data: Any, teacher_log_probs: Any, config: DistillationConfig) -> dict[str, float]:
    """Write the combined ``advantages`` into the DataProto ``data`` (as built by ``batch.build_batch``),
    keep ``teacher_log_probs`` and the reward's own ``reward_advantages`` beside them, and return
    the ``train/distill/*`` metrics.

    The student's log-probs are the batch's ``rollout_log_probs``: those of the policy that
    sampled, at ``algorithm.temperature``. The teacher's are its raw ones (temperature 1), so
    at another temperature even a teacher equal to the student pulls toward temperature 1.
    """
    import torch

    batch = data.batch
    if "teacher_log_probs" in batch.keys():
        raise DistillationError("this batch already carries the teacher's term: applying it again would count it twice")
    mask = batch["response_mask"]
    if tuple(teacher_log_probs.shape) != tuple(mask.shape):
        raise DistillationError(
            f"teacher log-probs of shape {tuple(teacher_log_probs.shape)} for a batch whose responses are "
            f"{tuple(mask.shape)}; score this batch's own rows (teacher_log_probs_of_batch)"
        )
    student, sampled = batch["rollout_log_probs"], mask.to(torch.bool)
    # The veRL backend trains on the reward's advantage and hands the teacher's log-probs to
    # veRL's own distillation loss (verl_trainer.distillation_inputs), so both are kept.
    batch["reward_advantages"] = batch["advantages"].clone()
    batch["advantages"] = distillation_advantages(student, teacher_log_probs, mask, batch["advantages"], config)
    # where, not a product: a -inf log-prob on an unsampled token times 0 would be NaN.
    batch["teacher_log_probs"] = torch.where(sampled, teacher_log_probs, torch.zeros_like(teacher_log_probs))
    estimate = _reverse_kl(student, teacher_log_probs, config)[sampled]
    return {
        "train/distill/reverse_kl": float(estimate.mean()) if estimate.numel() else 0.0,
        "train/distill/clamped_frac": float((estimate.abs() >= config.clamp).float().mean()) if estimate.numel() else 0.0,
    }
