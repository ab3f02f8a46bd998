"""Response bodies and stream chunks in vLLM's OpenAI-compatible shapes.

Non-streamed bodies carry every field vLLM serialises (nulls included); stream chunks
carry the fields vLLM sets on each kind of chunk, in the same order.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from components.engine._generation import Step
from components.engine._protocol import ChatRequest, CompletionRequest
from components.core.parsers import REASONING_FIELD, ChatParsers


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _chunk_head(id_prefix: str, kind: str, model: str) -> dict[str, Any]:
    """The fields every chunk of one stream repeats (one id for the whole stream)."""
    return {"id": new_id(id_prefix), "object": kind, "created": int(time.time()), "model": model}


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
    }


class TokenText:
    """Per-token strings for logprobs, as vLLM shows them (one token decoded alone)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        if token_id not in self._cache:
            self._cache[token_id] = self._tokenizer.decode([token_id], skip_special_tokens=False)
        return self._cache[token_id]


def _chat_entry(text: TokenText, token_id: int, logprob: float) -> dict[str, Any]:
    token = text(token_id)
    return {"token": token, "logprob": max(logprob, -9999.0), "bytes": list(token.encode("utf-8", errors="replace"))}


def chat_logprobs(text: TokenText, steps: list[Step]) -> dict[str, Any]:
    return {
        "content": [
            {
                **_chat_entry(text, s.token_id, s.logprob),
                "top_logprobs": [_chat_entry(text, t, lp) for t, lp in s.top_logprobs],
            }
            for s in steps
        ]
    }


def completion_logprobs(text: TokenText, steps: list[Step], offset: int = 0) -> dict[str, Any]:
    out: dict[str, list[Any]] = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
    for s in steps:
        token = text(s.token_id)
        out["text_offset"].append(offset)
        out["token_logprobs"].append(max(s.logprob, -9999.0))
        out["tokens"].append(token)
        # vLLM's dict holds the sampled token next to the top alternatives.
        top = {text(t): max(lp, -9999.0) for t, lp in s.top_logprobs}
        top.setdefault(token, max(s.logprob, -9999.0))
        out["top_logprobs"].append(top)
        offset += len(s.text)
    return out


def _finish(steps: list[Step]) -> tuple[str | None, str | int | None]:
    last = steps[-1] if steps else None
    return (last.finish_reason, last.stop_reason) if last else ("stop", None)


def _parsed(req: ChatRequest) -> dict[str, Any]:
    """What the parsers read of a request: its tools and its tool choice."""
    return {"tools": req.tool_dicts(), "tool_choice": req.tool_choice}


def chat_response(
    req: ChatRequest, model: str, prompt_ids: list[int], steps: list[Step], text: TokenText, parsers: ChatParsers
) -> dict[str, Any]:
    finish_reason, stop_reason = _finish(steps)
    answer = parsers.answer("".join(s.text for s in steps), finish_reason, _parsed(req))
    tool_calls, finish_reason = answer.tool_calls, answer.finish_reason
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.content,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    message[REASONING_FIELD] = answer.reasoning
    choice = {
        "index": 0,
        "message": message,
        "logprobs": chat_logprobs(text, steps) if req.logprobs else None,
        "finish_reason": finish_reason,
        "stop_reason": stop_reason,
        "token_ids": [s.token_id for s in steps] if req.return_token_ids else None,
    }
    return {
        "id": new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(len(prompt_ids), len(steps)),
        "prompt_logprobs": None,
        "prompt_token_ids": prompt_ids if req.return_token_ids else None,
        "kv_transfer_params": None,
    }


class ChatStream:
    """Turns generation steps into ``chat.completion.chunk`` bodies."""

    def __init__(
        self, req: ChatRequest, model: str, prompt_ids: list[int], text: TokenText, parsers: ChatParsers
    ) -> None:
        self._req = req
        self._prompt_ids = prompt_ids
        self._text = text
        self._head = _chunk_head("chatcmpl", "chat.completion.chunk", model)
        self._deltas = parsers.deltas(_parsed(req))
        self._count = 0
        options = req.stream_options
        self._usage_each = bool(options and options.continuous_usage_stats)
        self._usage_last = bool(options and options.include_usage)

    def first(self) -> dict[str, Any]:
        choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
        chunk = {**self._head, "choices": [choice]}
        if self._usage_each:
            chunk["usage"] = usage(len(self._prompt_ids), 0)
        chunk["prompt_token_ids"] = self._prompt_ids if self._req.return_token_ids else None
        return chunk

    def step(self, step: Step) -> dict[str, Any] | None:
        self._count += 1
        delta = self._deltas.feed(step.text, finished=step.finish_reason is not None)
        logprobs = chat_logprobs(self._text, [step]) if self._req.logprobs else None
        if delta is None:
            if step.finish_reason is None and logprobs is None and not self._req.return_token_ids:
                return None  # nothing a client could see
            delta = {}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": logprobs}
        if step.finish_reason is None:
            choice["finish_reason"] = None
        else:
            choice["finish_reason"] = self._deltas.finish_reason(step.finish_reason)
            choice["stop_reason"] = step.stop_reason
        choice["token_ids"] = [step.token_id] if self._req.return_token_ids else None
        chunk = {**self._head, "choices": [choice]}
        if self._usage_each:
            chunk["usage"] = usage(len(self._prompt_ids), self._count)
        return chunk

    def last(self) -> dict[str, Any] | None:
        if not self._usage_last:
            return None
        final_usage = {k: v for k, v in usage(len(self._prompt_ids), self._count).items() if v is not None}
        return {**self._head, "choices": [], "usage": final_usage}


def completion_response(
    req: CompletionRequest,
    model: str,
    prompt_ids: list[int],
    steps: list[Step],
    text: TokenText,
    prompt_logprobs: list[Any] | None = None,
) -> dict[str, Any]:
    finish_reason, stop_reason = _finish(steps)
    choice = {
        "index": 0,
        "text": "".join(s.text for s in steps),
        "logprobs": completion_logprobs(text, steps) if req.logprobs is not None else None,
        "finish_reason": finish_reason,
        "stop_reason": stop_reason,
        "token_ids": [s.token_id for s in steps] if req.return_token_ids else None,
        "prompt_logprobs": prompt_logprobs,
        "prompt_token_ids": prompt_ids if req.return_token_ids else None,
    }
    return {
        "id": new_id("cmpl"),
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(len(prompt_ids), len(steps)),
        "kv_transfer_params": None,
    }


class CompletionStream:
    """Turns generation steps into ``text_completion`` stream chunks."""

    def __init__(
        self,
        req: CompletionRequest,
        model: str,
        prompt_ids: list[int],
        text: TokenText,
        prompt_logprobs: list[Any] | None = None,
    ) -> None:
        self._req = req
        self._prompt_logprobs = prompt_logprobs
        self._prompt_ids = prompt_ids
        self._text = text
        self._head = _chunk_head("cmpl", "text_completion", model)
        self._count = 0
        self._offset = 0
        options = req.stream_options
        self._usage_last = bool(options and options.include_usage)

    def step(self, step: Step) -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0,
            "text": step.text,
            "logprobs": (
                completion_logprobs(self._text, [step], self._offset) if self._req.logprobs is not None else None
            ),
            "finish_reason": step.finish_reason,
            "stop_reason": step.stop_reason,
        }
        if self._prompt_logprobs is not None:
            choice["prompt_logprobs"] = self._prompt_logprobs if self._count == 0 else None  # once, as vLLM
        if self._req.return_token_ids:
            # vLLM sends the prompt's ids once, with the first generated token.
            choice["prompt_token_ids"] = self._prompt_ids if self._count == 0 else None
            choice["token_ids"] = [step.token_id]
        self._count += 1
        self._offset += len(step.text)
        return {**self._head, "choices": [choice]}

    def last(self) -> dict[str, Any] | None:
        if not self._usage_last:
            return None
        final_usage = {k: v for k, v in usage(len(self._prompt_ids), self._count).items() if v is not None}
        return {**self._head, "choices": [], "usage": final_usage}
