"""A chat request served by the engine's ``/v1/completions`` from a token-id prompt, and back.

The request keeps the chat request's sampling settings; the answer (whole or streamed) is
turned into the chat completion the chat endpoint would have produced: the same
answer formats (``components.core.parsers``, configured as the engine's), the same finish
reasons, logprobs in chat's shape, token ids where the engine put them for chat. Every
surface then answers the harness from it unchanged.
"""

from __future__ import annotations

from typing import Any

from components.core.parsers import REASONING_FIELD, ChatDeltas, ChatParsers

# Chat fields a text completion takes as they are (vLLM's names on both endpoints).
_PASSED = (
    "model", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos",
    "min_tokens", "include_stop_str_in_output", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "logit_bias", "allowed_token_ids", "bad_words", "skip_special_tokens", "return_token_ids", "stream",
    "stream_options",
)  # fmt: skip
_CONSTRAINED = (
    "response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar",
)  # fmt: skip


def chat_only(chat: dict[str, Any]) -> str | None:
    """Why this chat request needs the chat endpoint itself, or None when a token prompt can serve it."""
    choice = chat.get("tool_choice")
    if choice not in (None, "auto", "none"):
        return f"tool_choice {choice!r} is enforced by the engine's chat endpoint (constrained decoding)"
    for field in _CONSTRAINED:
        value = chat.get(field)
        if value is not None and value != {"type": "text"}:
            return f"{field} is enforced by the engine's chat endpoint (constrained decoding)"
    if chat.get("continue_final_message") or chat.get("add_generation_prompt") is False:
        return "the request continues its last message instead of starting a new turn"
    if _holds_images(chat.get("messages")):
        # A vision-language engine expands each image into vision tokens and reads its
        # pixels; a token-id prompt carries the tokens without the pixels.
        return "images reach the engine only through its chat endpoint (token ids carry no pixels)"
    return None


def _holds_images(messages: Any) -> bool:
    return isinstance(messages, list) and any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )


def completions_body(chat: dict[str, Any], prompt_ids: list[int]) -> dict[str, Any]:
    """The ``/v1/completions`` request that samples what ``chat`` asks for, from ``prompt_ids``."""
    body = {field: chat[field] for field in _PASSED if field in chat}
    body["prompt"] = prompt_ids
    # An explicit null: vLLM then gives the context left (capped by generation_config.json),
    # as chat does without a limit; left out, a text completion would stop after 16 tokens.
    body["max_tokens"] = chat.get("max_completion_tokens", chat.get("max_tokens"))
    top = chat.get("top_logprobs")
    body["logprobs"] = top if isinstance(top, int) and not isinstance(top, bool) else 0
    return body


class CompletionAsChat:
    """The engine's text completion as the chat completion the chat endpoint would return."""

    def __init__(self, chat: dict[str, Any], prompt_ids: list[int], parsers: ChatParsers) -> None:
        self._parsers = parsers
        self._request = chat
        top = chat.get("top_logprobs")
        self._top = top if isinstance(top, int) and not isinstance(top, bool) else 0
        self._prompt_ids = prompt_ids
        self._deltas: ChatDeltas | None = None
        self._head: dict[str, Any] = {}

    def answer(self, completion: dict[str, Any]) -> dict[str, Any]:
        """A non-streamed ``text_completion`` as a ``chat.completion``."""
        if "error" in completion or not isinstance(completion.get("choices"), list):
            return completion
        choices = []
        prompt_ids = self._prompt_ids
        for choice in completion["choices"]:
            prompt_ids = choice.get("prompt_token_ids") or prompt_ids
            text, finish = choice.get("text") or "", choice.get("finish_reason")
            parsed = self._parsers.answer(text, finish, self._request)
            message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
            if parsed.reasoning is not None:
                message[REASONING_FIELD] = parsed.reasoning
            if parsed.tool_calls:
                message["tool_calls"] = parsed.tool_calls
            choices.append(self._choice(choice, {"message": message}, parsed.finish_reason))
        return {
            **self._chat_head(completion, "chat.completion"),
            "choices": choices,
            "usage": completion.get("usage"),
            "prompt_token_ids": prompt_ids,
        }

    def chunks(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat chunks for one ``text_completion`` stream chunk (the first also opens the message)."""
        if "error" in chunk or chunk.get("object") == "error":
            return [chunk]
        out: list[dict[str, Any]] = []
        if self._deltas is None:
            self._deltas = self._parsers.deltas(self._request)
            self._head = self._chat_head(chunk, "chat.completion.chunk")
            opening = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}
            opening["finish_reason"] = None
            out.append({**self._head, "choices": [opening], "prompt_token_ids": self._engine_prompt(chunk)})
        choices = []
        for choice in chunk.get("choices") or ():
            finish = choice.get("finish_reason")
            delta = self._deltas.feed(choice.get("text") or "", finished=finish is not None)
            choices.append(self._choice(choice, {"delta": delta or {}}, self._deltas.finish_reason(finish)))
        if choices or chunk.get("usage") is not None:
            out.append({**self._head, "choices": choices, **({"usage": chunk["usage"]} if "usage" in chunk else {})})
        return out

    def _engine_prompt(self, chunk: dict[str, Any]) -> list[int]:
        # What the engine says it saw is what the record keeps; what was sent otherwise.
        for choice in chunk.get("choices") or ():
            if choice.get("prompt_token_ids"):
                return choice["prompt_token_ids"]
        return self._prompt_ids

    def _choice(self, choice: dict[str, Any], body: dict[str, Any], finish: Any) -> dict[str, Any]:
        return {
            "index": choice.get("index", 0),
            **body,
            "logprobs": _chat_logprobs(choice.get("logprobs"), self._top),
            "finish_reason": finish,
            "stop_reason": choice.get("stop_reason"),
            "token_ids": choice.get("token_ids"),
        }

    @staticmethod
    def _chat_head(completion: dict[str, Any], kind: str) -> dict[str, Any]:
        engine_id = str(completion.get("id") or "")
        return {
            "id": "chatcmpl-" + engine_id.removeprefix("cmpl-"),
            "object": kind,
            "created": completion.get("created"),
            "model": completion.get("model"),
        }


def _chat_logprobs(logprobs: Any, top: int) -> dict[str, Any] | None:
    """Text-completion logprobs (parallel lists) as chat's list of per-token entries."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("token_logprobs"), list):
        return None
    tokens = logprobs.get("tokens") or []
    tops = logprobs.get("top_logprobs") or []
    entries = []
    for position, value in enumerate(logprobs["token_logprobs"]):
        token = tokens[position] if position < len(tokens) else ""
        alternatives = tops[position] if position < len(tops) and isinstance(tops[position], dict) else {}
        best = sorted(alternatives.items(), key=lambda item: item[1], reverse=True)[:top]
        entry = _entry(token, value)
        entry["top_logprobs"] = [_entry(text, lp) for text, lp in best]
        entries.append(entry)
    return {"content": entries}


def _entry(token: str, logprob: Any) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8", errors="replace"))}
