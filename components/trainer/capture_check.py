"""Do the recorded token ids say what the harness was told? A check where a tokenizer is at hand.

Training learns from ``completion_token_ids``; the harness acted on the response text.
If the two disagree (a proxy or engine bug, a stream reassembled wrong, a record edited
by hand) the update would reward tokens the agent never acted on, so the rollout is
flagged, left out of training and counted.

What is checked, precisely: for each trained call (the latest attempt, no side calls,
``ok`` calls only) whose answer is *plain text only*, the decoded completion ids must
equal the answer's text, both stripped of surrounding whitespace and of U+FFFD (a
multi-byte character cut at ``max_tokens``). Plain text only means: chat completions
with one choice whose message has string content and no ``tool_calls`` and no
reasoning; completions' ``text``; Anthropic Messages whose content blocks are all
``text``; Responses whose output items are all ``message`` with ``output_text`` parts.
Anything else (tool calls, reasoning, images) is skipped and counted as skipped: the
engine's parsers rewrite those tokens into structures, so a text comparison would raise
false alarms. The ids are decoded with and without special tokens, and without the
final end-of-turn token when the call stopped (the engine reports it as an id but not as
text); a match of any counts. A call that stopped on a ``stop`` string may decode to the
text plus that string, which counts as a match.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from components.core.outcome import RewardRecord
from components.core.trajectory import RecordedCall, latest_attempt

Decode = Callable[[list[int], bool], str]  # (token ids, skip special tokens) -> text
MISMATCH = "token_text_mismatch"


def plain_text(call: RecordedCall) -> str | None:
    """The answer's text when the answer is plain text only, else None (not checked)."""
    response = call.response
    if not isinstance(response, dict):
        return None
    if call.api in ("chat.completions", "completions"):
        choices = response.get("choices")
        if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
            return None
        if call.api == "completions":
            text = choices[0].get("text")
            return text if isinstance(text, str) else None
        message = choices[0].get("message")
        if not isinstance(message, dict) or message.get("tool_calls"):
            return None
        if message.get("reasoning_content") or message.get("reasoning"):
            return None
        content = message.get("content")
        return content if isinstance(content, str) else None
    if call.api == "anthropic.messages":
        return _joined(response.get("content"), lambda block: block.get("text") if block.get("type") == "text" else None)
    if call.api == "responses":
        return _joined(response.get("output"), _message_text)
    return None


def _message_text(item: dict[str, Any]) -> str | None:
    if item.get("type") != "message":
        return None
    return _joined(item.get("content"), lambda part: part.get("text") if part.get("type") == "output_text" else None)


def _joined(items: Any, text_of: Callable[[dict[str, Any]], Any]) -> str | None:
    if not isinstance(items, list) or not items:
        return None
    texts = [text_of(item) if isinstance(item, dict) else None for item in items]
    return "".join(texts) if all(isinstance(t, str) for t in texts) else None


def _norm(text: str) -> str:
    return text.strip().strip("\ufffd").strip()


def tokens_match_text(call: RecordedCall, text: str, decode: Decode) -> bool:
    ids = list(call.completion_token_ids)
    candidates = [decode(ids, True), decode(ids, False)]
    if call.finish_reason == "stop" and len(ids) > 1:
        candidates.append(decode(ids[:-1], False))
    want = _norm(text)
    if any(_norm(c) == want for c in candidates):
        return True
    stops = call.sampling.stop or []
    return any(
        _norm(c).startswith(want) and _norm(c)[len(want) :].lstrip().startswith(tuple(s for s in stops if s))
        for c in candidates
        if stops
    )


def check_rollout(calls: Sequence[RecordedCall], decode: Decode) -> tuple[int, int, str | None]:
    """(calls checked, calls skipped, the first mismatch described or None)."""
    checked = skipped = 0
    for call in latest_attempt(calls):
        if call.tags.get("side_call") or not call.ok:
            continue
        text = plain_text(call)
        if text is None:
            skipped += 1
            continue
        checked += 1
        if not tokens_match_text(call, text, decode):
            shown = decode(list(call.completion_token_ids), True)
            return checked, skipped, f"call {call.call_index}: ids decode to {shown[:80]!r}, the text was {text[:80]!r}"
    return checked, skipped, None


def flag_mismatches(
    calls_by_rollout: Mapping[str, Sequence[RecordedCall]],
    records: Sequence[RewardRecord],
    decode: Decode,
) -> tuple[list[RewardRecord], dict[str, int], dict[str, str]]:
    """Records with token/text mismatches marked unusable; the call counts; the problems by rollout."""
    counts = {"checked": 0, "skipped": 0}
    problems: dict[str, str] = {}
    out = []
    for record in records:
        calls = calls_by_rollout.get(record.rollout_id)
        if record.usable and calls is not None:
            checked, skipped, problem = check_rollout(calls, decode)
            counts["checked"] += checked
            counts["skipped"] += skipped
            if problem is not None:
                problems[record.rollout_id] = problem
                record = record.model_copy(update={"usable": False})
        out.append(record)
    return out, counts, problems
