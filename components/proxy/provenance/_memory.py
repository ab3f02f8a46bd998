"""The answers the proxy returned, per session: the token ids to put back when one is echoed.

An answer is found again by two digests. The *answer digest* covers what the harness
sends back of it (content and tool calls, normalised: surrounding whitespace, argument
JSON spacing and key order, and tool-call ids do not count), so any API's echo of it
matches. The *context digest* covers everything the chat template rendered before it
(tools, template settings, the messages), taken as sent: the sampled prompt ids stand
for that context only if it is unchanged.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

# Request fields that change how the chat template renders the conversation.
_RENDER_FIELDS = ("tools", "chat_template", "chat_template_kwargs", "documents", "add_special_tokens")

UNKNOWN_ANSWER = "the last assistant message is not an answer this proxy returned in this session"
EDITED_HISTORY = "the history before the last assistant message changed since that answer was sampled"


@dataclass(frozen=True)
class Sampled:
    """One answer as the engine produced it: the prompt it saw and the ids it sampled."""

    call_index: int
    context: str
    prompt_ids: array
    completion_ids: array


def context_digests(body: dict[str, Any]) -> list[str]:
    """Digest of the rendering inputs before each message: entry ``i`` covers ``messages[:i]``."""
    head = orjson.dumps({field: body.get(field) for field in _RENDER_FIELDS}, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(head).digest()
    digests = [digest.hex()]
    for message in body.get("messages") or ():
        digest = hashlib.sha256(digest + orjson.dumps(message, option=orjson.OPT_SORT_KEYS)).digest()
        digests.append(digest.hex())
    return digests


def answer_digest(message: dict[str, Any]) -> str:
    """Digest of an assistant message's content and tool calls, as any API echoes them."""
    calls = [_call_key(call) for call in message.get("tool_calls") or ()]
    key = {"content": _text(message.get("content")).strip(), "tool_calls": calls}
    return hashlib.sha256(orjson.dumps(key)).hexdigest()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # text parts, joined as vLLM joins them
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _call_key(call: Any) -> list[Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return [None, None]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments) if arguments.strip() else {}
        except orjson.JSONDecodeError:
            arguments = arguments.strip()
    return [function.get("name"), orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()]


class AnswerMemory:
    """The latest answers of the most recently active sessions (bounded: ids of long chats are large)."""

    def __init__(self, *, per_session: int = 16, sessions: int = 256) -> None:
        self._per_session = per_session
        self._sessions = sessions
        self._answers: OrderedDict[str, OrderedDict[str, list[Sampled]]] = OrderedDict()

    def remember(self, session_id: str, answer: str, sampled: Sampled) -> None:
        answers = self._answers.get(session_id)
        if answers is None:
            answers = self._answers[session_id] = OrderedDict()
            if len(self._answers) > self._sessions:
                self._answers.popitem(last=False)
        self._answers.move_to_end(session_id)
        answers.setdefault(answer, []).append(sampled)
        answers.move_to_end(answer)
        while sum(len(entries) for entries in answers.values()) > self._per_session:
            oldest = next(iter(answers))
            answers[oldest].pop(0)
            if not answers[oldest]:
                del answers[oldest]

    def find(self, session_id: str, answer: str, context: str) -> Sampled | str:
        """The answer sampled in exactly this context (the latest if several), else why there is none."""
        entries = self._answers.get(session_id, {}).get(answer)
        if not entries:
            return UNKNOWN_ANSWER
        for sampled in reversed(entries):
            if sampled.context == context:
                return sampled
        return EDITED_HISTORY
