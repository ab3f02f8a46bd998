"""Token provenance: a call whose history ends with an answer the proxy returned is sent to
the engine as token ids, the sampled ids of that answer in place of its re-rendered text.

Re-rendering an answer does not give back the ids the policy sampled (the tokenizer
merges text differently, the template re-writes tool calls, harnesses trim whitespace),
and a prompt that differs from the previous call's prompt + completion breaks the
trainer's row. With provenance the next prompt is, by construction, the previous call's
prompt + its sampled completion + the new context, so the row continues. Only standard
vLLM endpoints are used: ``/tokenize`` (the engine's own template and tokenizer) and
``/v1/completions`` with a token-id prompt. Anything that cannot be spliced safely takes
the chat path, and the record says which path each call took and why (docs/proxy.md).
"""

from __future__ import annotations

import asyncio
from array import array
from dataclasses import dataclass
from typing import Any

import orjson

from components.core.parsers import ChatParsers
from components.proxy.errors import ProxyError
from components.proxy.provenance._completions import CompletionAsChat, chat_only, completions_body
from components.proxy.provenance._memory import AnswerMemory, Sampled, answer_digest, context_digests
from components.proxy.provenance._splice import NOT_A_PREFIX, closing_ids, splice, splice_rerendered
from components.proxy.upstream import Upstream

FIRST_TURN = "no assistant message in the history (a first turn)"
CLOSING_UNKNOWN = "the chat template's end of an assistant turn could not be learned from a probe conversation"
_RENDER_PASSED = ("tools", "chat_template", "chat_template_kwargs", "documents", "add_special_tokens")
_PROBE_USER = {"role": "user", "content": "Hi."}
_PROBE_REPLY = "Done."


@dataclass
class Route:
    """How one call reaches the engine, and what its record says about that."""

    context: str | None  # this call's conversation: its answer is remembered under it (None: not a plain turn)
    reason: str | None = None  # why the call takes the chat path
    body: dict[str, Any] | None = None  # the /v1/completions request, on the token path
    as_chat: CompletionAsChat | None = None  # turns the engine's text completion into the chat answer
    continues: int | None = None  # the call whose prompt and sampled ids the prompt starts with
    answer: str | None = None  # digest of the answer the engine gave (answer_digest), once it is known

    def record(self) -> dict[str, Any]:
        """The record's ``provenance`` field; ``context`` and ``answer`` let a restarted proxy
        remember the answer again from the session file (``restore``)."""
        if self.body is None:
            record: dict[str, Any] = {"path": "chat", "reason": self.reason}
        else:
            request = {key: value for key, value in self.body.items() if key != "prompt"}  # the ids are prompt_token_ids
            record = {"path": "tokens", "continues_call": self.continues, "upstream_request": request}
        if self.context is not None and self.answer is not None:
            record["context"], record["answer"] = self.context, self.answer
        return record


class TokenProvenance:
    """Remembers each session's answers and routes calls that echo one to the token path."""

    def __init__(self, upstream: Upstream, parsers: ChatParsers, memory: AnswerMemory | None = None) -> None:
        self._upstream = upstream
        self._parsers = parsers
        self._memory = memory or AnswerMemory()
        self._closings: dict[bytes, list[int] | None] = {}

    async def route(self, session_id: str, chat: dict[str, Any]) -> Route:
        digests = context_digests(chat)
        plain_turn = not chat.get("continue_final_message") and chat.get("add_generation_prompt") is not False
        route = Route(context=digests[-1] if plain_turn else None)
        planned = await self._plan(session_id, chat, digests)
        if isinstance(planned, str):
            route.reason = planned
        else:
            sampled, prompt = planned
            route.body, route.as_chat = completions_body(chat, prompt), CompletionAsChat(chat, prompt, self._parsers)
            route.continues = sampled.call_index
        return route

    async def _plan(self, session_id: str, chat: dict[str, Any], digests: list[str]) -> tuple[Sampled, list[int]] | str:
        """The remembered answer the prompt continues and the prompt's ids, or why there are none."""
        reason = chat_only(chat)
        if reason is not None:
            return reason
        messages = chat.get("messages") or []
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
        if last is None:
            return FIRST_TURN
        found = self._memory.find(session_id, answer_digest(messages[last]), digests[last])
        if isinstance(found, str):
            return found
        try:
            closing, through, whole = await asyncio.gather(
                self._closing(chat),
                self._tokenize(chat, messages[: last + 1], generation_prompt=False),
                self._tokenize(chat, messages, generation_prompt=True),
            )
        except ProxyError as err:
            return f"the engine's /tokenize failed: {err.message}"
        if closing is None:
            return CLOSING_UNKNOWN
        prompt = splice(found, closing, through, whole)
        if prompt == NOT_A_PREFIX:  # only the answer's own rendering may have changed: find its turn in whole
            try:
                opening = await self._tokenize(chat, messages[:last], generation_prompt=True)
            except ProxyError as err:
                return f"the engine's /tokenize failed: {err.message}"
            prompt = splice_rerendered(found, closing, opening, whole)
        return prompt if isinstance(prompt, str) else (found, prompt)

    @staticmethod
    def answered(route: Route, chat: dict[str, Any]) -> None:
        """Note the digest of the answer in ``chat`` on its route, for the record and ``remember``."""
        choices = chat.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if route.context is not None and isinstance(message, dict):
            route.answer = answer_digest(message)

    def remember(self, session_id: str, route: Route, prompt_ids: list[int], completion_ids: list[int],
                 call_index: int) -> None:  # fmt: skip
        """Keep a successful answer's ids, to put back when the harness sends the answer again."""
        if route.context is None or route.answer is None or not completion_ids or not prompt_ids:
            return
        sampled = Sampled(call_index, route.context, array("i", prompt_ids), array("i", completion_ids))
        self._memory.remember(session_id, route.answer, sampled)

    def restore(self, session_id: str, records: list[dict[str, Any]]) -> int:
        """Remember the answers a session file holds (a restarted proxy); returns how many."""
        restored = 0
        for record in records:
            provenance = record.get("provenance")
            if record.get("error") is not None or not isinstance(provenance, dict):
                continue
            context, answer = provenance.get("context"), provenance.get("answer")
            prompt_ids, completion_ids = record.get("prompt_token_ids"), record.get("completion_token_ids")
            if isinstance(context, str) and isinstance(answer, str) and prompt_ids and completion_ids:
                sampled = Sampled(record["call_index"], context, array("i", prompt_ids), array("i", completion_ids))
                self._memory.remember(session_id, answer, sampled)
                restored += 1
        return restored

    async def _tokenize(self, chat: dict[str, Any], messages: list[Any], *, generation_prompt: bool) -> list[int]:
        body: dict[str, Any] = {"model": chat.get("model"), "messages": messages}
        body["add_generation_prompt"] = generation_prompt
        body.update((field, chat[field]) for field in _RENDER_PASSED if chat.get(field) is not None)
        return (await self._upstream.tokenize(body))["tokens"]

    async def _closing(self, chat: dict[str, Any]) -> list[int] | None:
        """What the template writes after an assistant message's content, learned once per template."""
        template = {field: chat.get(field) for field in ("chat_template", "chat_template_kwargs")}
        key = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
        if key not in self._closings:
            probe = {"model": chat.get("model"), **{k: v for k, v in template.items() if v is not None}}
            reply = {"role": "assistant", "content": _PROBE_REPLY}
            prompt, through, content = await asyncio.gather(
                self._tokenize(probe, [_PROBE_USER], generation_prompt=True),
                self._tokenize(probe, [_PROBE_USER, reply], generation_prompt=False),
                self._upstream.tokenize({"model": probe["model"], "prompt": _PROBE_REPLY, "add_special_tokens": False}),
            )
            self._closings[key] = closing_ids(prompt, through, content["tokens"])
        return self._closings[key]
