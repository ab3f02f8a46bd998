"""Rows that start with the same prompt run that prompt once per micro-batch (CPU update).

A task's GRPO siblings start from the same first prompt, and an agent harness's is long:
Claude Code's is ~22,700 tokens, against a few hundred of each session's own. Run row by
row, the update computes that prompt, forward and backward, once per sibling. Here the
micro-batch's common prefix runs once, its keys and values are shared by every row (an
``expand``, so their gradients add up in the one prefix graph), and each row runs only
its own tokens after it. The loss and the gradient are the same as row by row's (tested
to float tolerance); the cost of a group of siblings drops from n prompts to one.

A vision-language row shares only the text before its first image: two screenshots of one
size expand to the same pad tokens, yet the model replaces those with each row's own
pixels' features, so equal ids there do not mean equal keys and values.
"""

from __future__ import annotations

from typing import Any

# Below this many shared tokens a second forward call costs more than it saves.
MIN_SHARED = 512


def shared_prefix_length(prompts: list[Any], image_token: int | None = None) -> int:
    """Tokens every row's prompt starts with (1-D id tensors, unpadded), leaving each row at
    least its last prompt token: that position's logits predict the first answer token.
    ``image_token``: a vision-language model's image pad id, where the shared text ends."""
    import torch

    if len(prompts) < 2:
        return 0
    limit = min(len(p) for p in prompts) - 1
    if limit <= 0:
        return 0
    first = prompts[0][:limit]
    same = torch.ones(limit, dtype=torch.bool)
    for other in prompts[1:]:
        same &= other[:limit] == first
    if image_token is not None:
        same &= first != image_token
    differs = (~same).nonzero()
    return int(differs[0]) if len(differs) else limit


def prefixed_logits(model: Any, micro: dict[str, Any], shared: int, keep: int, extra: dict[str, Any]) -> Any:
    """The last ``keep`` positions' logits of every row, the first ``shared`` prompt tokens
    (the same in every row, no image among them) run once. ``extra``: the forward's
    ``position_ids`` ((rows, width), or M-RoPE's (4, rows, width)) and any rows' images, all
    of which lie after the prefix."""
    import torch
    from transformers import DynamicCache

    ids, mask, positions = micro["input_ids"], micro["attention_mask"], extra["position_ids"]
    rows = ids.shape[0]
    prompt_width = micro["prompts"].shape[1]
    prompt_lengths = mask[:, :prompt_width].sum(1)
    first = prompt_width - int(prompt_lengths[0])  # row 0's first prompt column (prompts are left-padded)
    cache = DynamicCache()
    model(
        input_ids=ids[:1, first : first + shared],
        position_ids=positions[..., :1, first : first + shared],
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    for layer in cache.layers:  # one copy of the prefix, seen by every row
        layer.keys = layer.keys.expand(rows, -1, -1, -1)
        layer.values = layer.values.expand(rows, -1, -1, -1)
    tails = prompt_lengths - shared  # each row's prompt after the prefix, at least one token
    start = prompt_width - int(tails.max())
    columns = torch.arange(start, ids.shape[1])
    # Before a row's own tail sit padding or its copy of the prefix, already in the cache.
    own = mask[:, start:].clone()
    own[columns.unsqueeze(0) < (prompt_width - tails).unsqueeze(1)] = 0
    attention = torch.cat([torch.ones(rows, shared, dtype=mask.dtype), own], dim=1)
    return model(
        input_ids=ids[:, start:],
        attention_mask=attention,
        **{**extra, "position_ids": positions[..., start:]},
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=keep,
    ).logits
