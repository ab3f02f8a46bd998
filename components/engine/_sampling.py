"""Sampling settings and the choice of the next token from a row of logits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.core.sampling import NEUTRAL_SAMPLING

# vLLM samples greedily below this temperature.
_GREEDY_BELOW = 1e-5


@dataclass(frozen=True)
class SamplingParams:
    """What one request asks of the generation loop (vLLM's meaning for each field)."""

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 or -1: off
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    min_tokens: int = 0
    top_logprobs: int = 0
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False

    def applied(self) -> dict[str, float | int]:
        """Every distribution-shaping setting as this loop samples with it (the answer's
        ``x-openforge-sampling`` header): the ones it does not implement are neutral here,
        since a request or checkpoint asking otherwise is refused before generation."""
        return {
            **NEUTRAL_SAMPLING,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k if self.top_k > 0 else -1,
        }


def sampling_logits(logits: Any, params: SamplingParams, banned: list[int]) -> Any | None:
    """The logits of the distribution a token is drawn from: ``logits`` (1-D, raw) with
    ``banned`` removed, over the temperature, top-k and top-p cut; None when greedy."""
    import torch

    if banned:
        logits = logits.clone()
        logits[banned] = float("-inf")
    if params.temperature < _GREEDY_BELOW:
        return None
    logits = logits / params.temperature
    if 0 < params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Drop a token when the tokens ranked above it already reach top_p; the first stays.
        drop = (torch.cumsum(probs, dim=-1) - probs) > params.top_p
        logits = logits.clone()
        logits[order[drop]] = float("-inf")
    return logits


def pick_token(logits: Any, params: SamplingParams, generator: Any, banned: list[int]) -> tuple[int, Any | None]:
    """One token id drawn from raw ``logits`` (1-D float tensor) under ``params``, and the
    log-probabilities of the distribution it was drawn from (None when greedy): what vLLM
    reports in ``processed_logprobs`` mode, and what the trainer recomputes (logits / T)."""
    import torch

    processed = sampling_logits(logits, params, banned)
    if processed is None:
        masked = logits.clone()
        masked[banned] = float("-inf")
        return int(torch.argmax(masked)), None
    token = int(torch.multinomial(torch.softmax(processed, dim=-1), 1, generator=generator))
    return token, torch.log_softmax(processed, dim=-1)
