"""The engine's side of every call: its chat-completions dialect, whatever surface the harness spoke.

Three jobs, shared by all surfaces: ask the engine for the training data (token ids,
logprobs, training-mode sampling), merge its streamed chunks back into one chat
completion, and pull the tokens a record needs out of that completion.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from components.core.sampling import NEUTRAL_SAMPLING

# Training samples from the policy's own distribution: every knob that reshapes it is sent
# at its neutral value (so no engine default, e.g. a checkpoint's top_k, can slip in) and
# logit_bias, which has no value to send, is removed. Never train on numbers you did not sample with.
_REMOVED_IN_TRAINING = ("logit_bias",)


def call_seed(base: str, session_id: str, attempt: int, chat_request: dict[str, Any]) -> int:
    """A per-call seed that a rerun of the same rollout gives the same call: its turn is its
    message count, which does not depend on paths, times or ids inside the messages."""
    messages = chat_request.get("messages")
    turn = len(messages) if isinstance(messages, list) else 0
    digest = hashlib.sha256(f"{base}/{session_id}/{attempt}/{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # 31 bits: any engine's seed type holds it


# What only vLLM-style engines take: a teacher behind another OpenAI-compatible API would
# refuse the request (or bill for logprobs nobody reads), so these never go to one.
ENGINE_ONLY_FIELDS = (
    "return_token_ids", "skip_special_tokens", "top_k", "min_p", "repetition_penalty", "min_tokens", "ignore_eos",
    "stop_token_ids", "include_stop_str_in_output", "add_generation_prompt", "continue_final_message",
    "add_special_tokens", "prompt_logprobs", "return_tokens_as_token_ids", "chat_template", "chat_template_kwargs",
    "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs", "priority",
)  # fmt: skip


def prepare_upstream_body(
    chat_request: dict[str, Any],
    *,
    model: str | None,
    training: bool,
    stream: bool,
    seed: int | None = None,
    teacher: bool = False,
    temperature: float = 1.0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request sent upstream, and the ``sampling`` record of what it asks the engine to use.

    ``seed`` (training mode only) is used when the harness sent none; ``temperature`` is the
    training temperature (every other knob neutral). ``teacher``: the
    upstream is a teacher endpoint, asked for the answer only (``ENGINE_ONLY_FIELDS`` removed).
    """
    body = dict(chat_request)
    if model is not None:
        body["model"] = model
    if teacher:
        for name in ENGINE_ONLY_FIELDS:
            body.pop(name, None)
    else:
        body["return_token_ids"] = True
        body["logprobs"] = True  # the client's top_logprobs, if any, is kept as sent
        body["skip_special_tokens"] = False
    if stream:
        # Usage makes the reassembled stream match the non-streamed shape; stripped for clients that did not ask.
        options = body.get("stream_options")
        body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    dropped: list[str] = []
    if training:
        policy = {**NEUTRAL_SAMPLING, "temperature": temperature}
        dropped = [
            knob for knob, value in policy.items() if knob in body and body[knob] != value
        ] + [knob for knob in _REMOVED_IN_TRAINING if knob in body]
        body.update(policy)
        for knob in _REMOVED_IN_TRAINING:
            body.pop(knob, None)
        if seed is not None and not _is_int(body.get("seed")):
            body["seed"] = seed
    return body, _sampling(body, overridden=training, dropped=dropped)


def _sampling(body: dict[str, Any], *, overridden: bool, dropped: list[str]) -> dict[str, Any]:
    # Only well-typed values are recorded: a malformed harness value must not make the record invalid.
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    sampling: dict[str, Any] = {
        "temperature": _number(body.get("temperature")),
        "top_p": _number(body.get("top_p")),
        "max_tokens": max_tokens if _is_int(max_tokens) else None,
        "seed": body.get("seed") if _is_int(body.get("seed")) else None,
        "stop": _stops(body.get("stop")),
        "overridden": overridden,
    }
    for knob in NEUTRAL_SAMPLING:
        if knob not in sampling and _number(body.get(knob)) is not None:
            sampling[knob] = body[knob]
    if dropped:
        sampling["dropped"] = dropped
    return sampling


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _stops(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


@dataclass
class Completion:
    """The tokens of one sampled completion, as a record stores them."""

    prompt_token_ids: list[int] = field(default_factory=list)
    completion_token_ids: list[int] = field(default_factory=list)
    completion_logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    problem: str | None = None  # set when the engine's answer cannot be trained on as is


def extract_completion(chat: dict[str, Any], text_only: bool = False) -> Completion:
    """Tokens of the single choice of a (reassembled) chat completion from the engine;
    ``text_only`` (a teacher's answer): none are expected, and none are kept."""
    choices = chat.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Completion(problem="upstream answer has no choices")
    choice = choices[0]
    if text_only:
        return Completion(finish_reason=choice.get("finish_reason"))
    prompt_ids = chat.get("prompt_token_ids")
    token_ids = choice.get("token_ids")
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    completion = Completion(
        prompt_token_ids=prompt_ids if isinstance(prompt_ids, list) else [],
        completion_token_ids=token_ids if isinstance(token_ids, list) else [],
        completion_logprobs=_logprob_values(content),
        finish_reason=choice.get("finish_reason"),
    )
    if content is not None and not completion.completion_logprobs and content:
        completion.problem = "upstream logprobs entries have no numeric 'logprob'"
    elif not completion.completion_token_ids and completion.finish_reason is not None:
        completion.problem = "upstream did not return token ids; it must support return_token_ids (vLLM >= 0.10.2)"
    elif len(completion.completion_logprobs) != len(completion.completion_token_ids):
        completion.problem = (
            f"upstream returned {len(completion.completion_logprobs)} logprobs for "
            f"{len(completion.completion_token_ids)} tokens"
        )
        completion.completion_logprobs = []  # keep the record valid; the error marks it unusable
    return completion


_NUMBER_TYPES = frozenset({int, float})  # by exact type: JSON's true and false decode to bool, an int subclass


def _logprob_values(content: Any) -> list[float]:
    # A long completion's record waits on this: one comprehension, and the types checked in C.
    if not isinstance(content, list):
        return []
    try:
        values = [entry["logprob"] for entry in content]
    except (TypeError, KeyError):  # an entry that is not an object, or has no logprob
        return []
    return values if _NUMBER_TYPES.issuperset(map(type, values)) else []


class ChatStreamAssembler:
    """Merges the engine's chat chunks into the completion the non-streamed API would return.

    Feed every chunk before a surface edits it for the client: the assembler keeps
    references to token id lists and logprob entries, never to the chunk's own dicts.
    """

    def __init__(self) -> None:
        self.error: str | None = None
        self._head: dict[str, Any] = {}
        self._prompt_token_ids: list[int] | None = None
        self._usage: Any = None
        self._choices: dict[int, _ChoiceParts] = {}

    def add(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk or chunk.get("object") == "error":
            inner = chunk.get("error") if isinstance(chunk.get("error"), dict) else chunk
            self.error = f"upstream reported an error mid-stream: {inner.get('message', inner)}"
            return
        if not self._head:
            self._head = {key: chunk[key] for key in ("id", "created", "model", "system_fingerprint") if key in chunk}
        if self._prompt_token_ids is None and chunk.get("prompt_token_ids") is not None:
            self._prompt_token_ids = chunk["prompt_token_ids"]
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            index = choice.get("index", 0)
            parts = self._choices.get(index)
            if parts is None:
                parts = self._choices[index] = _ChoiceParts()
            parts.add(choice)

    @property
    def finished(self) -> bool:
        """True once every choice has its finish_reason (the stream's answer is complete)."""
        return bool(self._choices) and all(p.finish_reason is not None for p in self._choices.values())

    def completion(self) -> dict[str, Any]:
        """The reassembled ``chat.completion`` body, engine fields (token ids, logprobs) included."""
        body: dict[str, Any] = {"id": self._head.get("id"), "object": "chat.completion"}
        body.update((key, value) for key, value in self._head.items() if key != "id")
        body["choices"] = [self._choices[index].choice(index) for index in sorted(self._choices)]
        body["usage"] = self._usage
        if self._prompt_token_ids is not None:
            body["prompt_token_ids"] = self._prompt_token_ids
        return body


_CHOICE_PARTS = frozenset({"index", "delta", "logprobs", "finish_reason", "token_ids"})


class _ChoiceParts:
    """One choice's deltas, concatenated: text fields joined, tool calls merged by index."""

    def __init__(self) -> None:
        self.finish_reason: str | None = None
        self._role = "assistant"
        self._content: list[str] = []
        # Text fields by delta key; "content" is set up front for the fast path (message
        # content is None either way while no piece arrived).
        self._text: dict[str, list[str]] = {"content": self._content}
        self._tool_calls: dict[int, dict[str, Any]] = {}
        self._token_ids: list[int] | None = None
        self._logprobs: list[dict[str, Any]] | None = None
        self._extra: dict[str, Any] = {}

    def add(self, choice: dict[str, Any]) -> None:
        # Runs once per streamed token: the common chunk (content only, no extras) takes
        # the shortest path, everything else the general one.
        delta = choice.get("delta")
        if delta:
            content = delta.get("content")
            if type(content) is str and len(delta) == 1:
                self._content.append(content)
            else:
                self._add_delta(delta)
        token_ids = choice.get("token_ids")
        if token_ids is not None:
            if self._token_ids is None:
                self._token_ids = []
            self._token_ids.extend(token_ids)
        logprobs = choice.get("logprobs")
        if logprobs is not None and type(logprobs) is dict and logprobs.get("content") is not None:
            if self._logprobs is None:
                self._logprobs = []
            self._logprobs.extend(logprobs["content"])
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None:
            self.finish_reason = finish_reason
        if not _CHOICE_PARTS.issuperset(choice):
            self._add_extras(choice)

    def _add_delta(self, delta: dict[str, Any]) -> None:
        for key, value in delta.items():
            if key == "role" and value:
                self._role = value
            elif key == "tool_calls":
                for call in value or ():
                    self._merge_tool_call(call)
            elif isinstance(value, str):
                self._text.setdefault(key, []).append(value)
            elif value is None:
                self._text.setdefault(key, [])

    def _add_extras(self, choice: dict[str, Any]) -> None:
        for key, value in choice.items():  # engine extras such as vLLM's stop_reason: last value wins
            if key not in _CHOICE_PARTS and (value is not None or key not in self._extra):
                self._extra[key] = value

    def _merge_tool_call(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self._tool_calls))
        merged = self._tool_calls.setdefault(index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        if call.get("id"):
            merged["id"] = call["id"]
        if call.get("type"):
            merged["type"] = call["type"]
        function = call.get("function") or {}
        if function.get("name") and not merged["function"]["name"]:
            merged["function"]["name"] = function["name"]
        if function.get("arguments"):
            merged["function"]["arguments"] += function["arguments"]

    def choice(self, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self._role, "content": None}
        for key, pieces in self._text.items():
            message[key] = "".join(pieces) if pieces else None
        if self._tool_calls:
            message["tool_calls"] = [self._tool_calls[i] for i in sorted(self._tool_calls)]
        choice: dict[str, Any] = {
            "index": index,
            "message": message,
            "logprobs": None if self._logprobs is None else {"content": self._logprobs},
            "finish_reason": self.finish_reason,
        }
        choice.update(self._extra)
        if self._token_ids is not None:
            choice["token_ids"] = self._token_ids
        return choice
