"""Choice mode's step: score each candidate turn under the model, sample one, force it.

A candidate's probability is the product of its tokens' probabilities after the prompt
(the model's raw softmax, as the recorded logprobs are). One candidate is drawn with
probability proportional to ``p(candidate) ** (1 / temperature)``: at temperature 1
exactly the model's distribution restricted to the candidates. The drawn candidate is
then forced through the ordinary loop, so the engine returns, and the proxy records, its
tokens with their own per-token logprobs. docs/engine.md ("Choice mode") has the maths.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.engine._generation import ChoiceReply, ModelRunner

_GREEDY_BELOW = 1e-5  # as the token sampler: vLLM samples greedily below this temperature
_log = logging.getLogger("openforge.engine.choice")


def sequence_logprobs(runner: "ModelRunner", prompt_ids: list[int], candidates: list[list[int]]) -> list[float]:
    """log p(candidate | prompt) for each candidate; the cache is left holding the prompt."""
    import torch

    after_prompt = torch.log_softmax(runner._prefill(prompt_ids), dim=-1)
    totals = []
    for ids in candidates:
        total = float(after_prompt[ids[0]])
        if len(ids) > 1:
            logprobs = torch.log_softmax(runner._forward_all(ids[:-1]), dim=-1)
            total += float(logprobs.gather(1, torch.tensor(ids[1:]).unsqueeze(1)).sum())
            runner._rewind(len(prompt_ids))
        totals.append(total)
    return totals


def choose(runner: "ModelRunner", prompt_ids: list[int], reply: "ChoiceReply", temperature: float, generator: Any) -> list[int]:
    """The token ids of the candidate drawn for this prompt."""
    import torch

    if len(reply.candidates) == 1:
        return reply.candidates[0]
    if reply.error_rate is not None:
        return reply.candidates[_teacher_draw(len(reply.candidates), reply.error_rate, generator)]
    totals = torch.tensor(sequence_logprobs(runner, prompt_ids, reply.candidates), dtype=torch.float64)
    probs = torch.softmax(totals / max(temperature, _GREEDY_BELOW), dim=-1)
    if temperature < _GREEDY_BELOW:
        index = int(torch.argmax(totals))
    else:
        index = int(torch.multinomial(probs.float(), 1, generator=generator))
    _log.info(
        "choice %s: drew %d of %d, p=%s, lengths=%s",
        reply.label or "-",
        index,
        len(totals),
        [round(p, 4) for p in probs.tolist()],
        [len(ids) for ids in reply.candidates],
    )
    return reply.candidates[index]


def _teacher_draw(count: int, error_rate: float, generator: Any) -> int:
    """A reference teacher's pick: the reference (0) with probability 1 - error_rate, else another.

    From the request's generator, so a seeded recording errs on the same turns when rerun.
    """
    import torch

    if float(torch.rand(1, generator=generator)) >= error_rate:
        return 0
    return 1 + int(torch.randint(count - 1, (1,), generator=generator))
