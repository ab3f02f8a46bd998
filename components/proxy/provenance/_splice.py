"""The prompt ids of a conversation whose last assistant message is an answer the proxy holds.

Three token lists, all rendered by the engine's own chat template and tokenizer:
``through`` (the conversation up to and including that answer, no generation prompt),
``whole`` (the request as the chat endpoint would render it) and, learned once, the
template's ``closing`` (what it writes after an assistant message's content, e.g. Qwen's
``<|im_end|>`` ``\\n``). Then

    prompt = sampled prompt + sampled completion + rest of closing + whole[len(through):]

where the rest of the closing drops the end-of-turn token when the model sampled it
itself. Every step is checked; a failed check names why, and the call takes the chat path.

Some templates render an assistant message differently once more messages follow: Qwen3's
writes an empty ``<think></think>`` before the latest answer but not before earlier ones,
and strips a reasoning model's thinking from earlier turns. ``through`` is then no prefix
of ``whole``, yet only that answer's own rendering differs, and it is replaced by the
sampled ids anyway. ``splice_rerendered`` covers that case: it finds where the answer's
turn starts (``opening``: the conversation before it, with the generation prompt) and
ends (its closing) inside ``whole`` and keeps what follows.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.proxy.provenance._memory import Sampled

NOT_A_PREFIX = "the chat template renders the history differently once more messages follow"
OPENING_DIFFERS = (
    "the chat template renders the conversation before the last assistant message, or that message's start, "
    "differently once more messages follow"
)
UNCLOSED_TURN = "the chat template does not close this assistant message the way it closes others"


def closing_ids(prompt: Sequence[int], through: Sequence[int], content: Sequence[int]) -> list[int] | None:
    """What the template writes after an assistant message's content, from a probe conversation:
    ``prompt`` renders it up to the generation prompt, ``through`` up to the end of a reply
    whose content tokenizes alone as ``content``. None when the probe does not line up."""
    if not content or list(through[: len(prompt)]) != list(prompt):
        return None
    reply = list(through[len(prompt) :])
    for start in range(len(reply) - len(content), -1, -1):  # the last occurrence: templates may add text before
        if reply[start : start + len(content)] == list(content):
            return reply[start + len(content) :]
    return None


def splice(sampled: Sampled, closing: Sequence[int], through: Sequence[int], whole: Sequence[int]) -> list[int] | str:
    """The prompt holding the sampled ids in place of the re-rendered answer, or why it cannot."""
    if len(whole) < len(through) or list(whole[: len(through)]) != list(through):
        return NOT_A_PREFIX
    if closing and list(through[len(through) - len(closing) :]) != list(closing):
        return UNCLOSED_TURN
    return _joined(sampled, closing, whole[len(through) :])


def _joined(sampled: Sampled, closing: Sequence[int], rest: Sequence[int]) -> list[int]:
    """Sampled prompt + completion + the closing's rest (less the end-of-turn token the model
    sampled itself) + what follows the answer's turn."""
    completion = sampled.completion_ids
    ended_turn = bool(closing) and len(completion) > 0 and completion[-1] == closing[0]
    tail = list(closing[1:] if ended_turn else closing)
    return [*sampled.prompt_ids, *completion, *tail, *rest]


def splice_rerendered(
    sampled: Sampled, closing: Sequence[int], opening: Sequence[int], whole: Sequence[int]
) -> list[int] | str:
    """The spliced prompt when only the answer's own rendering changed once more messages followed."""
    if not closing:
        return UNCLOSED_TURN
    if len(whole) < len(opening) or list(whole[: len(opening)]) != list(opening):
        return OPENING_DIFFERS
    # The answer's turn ends at the first closing after its opening: closings start with the
    # end-of-turn special token, which no rendered text produces.
    closing, whole = list(closing), list(whole)
    end = len(opening)
    while True:
        try:
            end = whole.index(closing[0], end)
        except ValueError:
            return UNCLOSED_TURN
        if whole[end : end + len(closing)] == closing:
            return _joined(sampled, closing, whole[end + len(closing) :])
        end += 1
