"""vLLM's ``prompt_logprobs``: the model's log-probability of each prompt token after the ones
before it, the way a teacher scores a student's sampled tokens (on-policy distillation) or
an evaluator scores a reference answer.

vLLM's shape, per prompt position: ``None`` for the first token (nothing precedes it), then
``{token_id: {"logprob", "rank", "decoded_token"}}`` holding the prompt's own token and the
``top`` most probable ones; ``rank`` is 1 for the most probable token. Log-probabilities are
the model's raw log-softmax, as the sampled tokens' are (docs/engine.md, "Endpoints").
"""

from __future__ import annotations

from typing import Any, Callable

_CHUNK = 1024  # positions whose log-softmax is taken at once: bounds the [chunk, vocab] floats


def prompt_logprobs(
    logits_of: Callable[[list[int]], Any], prompt_ids: list[int], top: int, decode: Callable[[int], str]
) -> list[dict[str, dict[str, Any]] | None]:
    """Each prompt token's entry; ``logits_of(ids)`` gives the logits of every position of ``ids``."""
    import torch

    logits = logits_of(prompt_ids)
    out: list[dict[str, dict[str, Any]] | None] = [None]
    for start in range(0, len(prompt_ids) - 1, _CHUNK):
        logprobs = torch.log_softmax(logits[start : start + _CHUNK].float(), dim=-1)
        targets = torch.tensor(prompt_ids[start + 1 : start + 1 + len(logprobs)])
        logprobs = logprobs[: len(targets)]
        chosen = logprobs.gather(1, targets.unsqueeze(1)).squeeze(1)
        ranks = (logprobs > chosen.unsqueeze(1)).sum(dim=1) + 1
        best = torch.topk(logprobs, top) if top else None
        for i, token in enumerate(targets.tolist()):
            entry = {str(token): _entry(float(chosen[i]), int(ranks[i]), decode(token))}
            if best is not None:
                for rank, (value, other) in enumerate(zip(best.values[i].tolist(), best.indices[i].tolist()), start=1):
                    entry.setdefault(str(other), _entry(value, rank, decode(other)))
            out.append(entry)
    return out


def _entry(logprob: float, rank: int, decoded: str) -> dict[str, Any]:
    return {"logprob": max(logprob, -9999.0), "rank": rank, "decoded_token": decoded}
