"""A teacher's text-only calls as the token ids the student would have seen and written.

A teacher behind another API (proxy ``--teacher``) answers with text only, so its calls are
recorded without token ids (``text_only``). SFT gives them the ids of the student's own chat
template (``components.engine.chat_tokens``): the prompt as the student's engine renders the
conversation, the answer as its template writes an assistant turn. RL never trains on them:
their tokens were not sampled by any policy it could compute a ratio against.
"""

from __future__ import annotations

import json
from typing import Any

from components.core.trajectory import RecordedCall, chat_request


class TextCallError(ValueError):
    """A text-only call that cannot be tokenized; the message names the call and the fix."""


def with_student_tokens(call: RecordedCall, tokenizer: Any) -> RecordedCall:
    """``call`` with token ids from ``tokenizer``'s chat template when it was recorded as text; else as it is."""
    from components.engine.chat_tokens import chat_token_ids

    if not call.text_only:
        return call
    reply = _chat_reply(call)
    prompt, completion = chat_token_ids(tokenizer, chat_request(call), reply)
    return call.model_copy(
        update={
            "prompt_token_ids": prompt,
            "completion_token_ids": completion,
            "completion_logprobs": [0.0] * len(completion),
        }
    )


def _chat_reply(call: RecordedCall) -> dict[str, Any]:
    """The teacher's answer as a chat assistant message (content, tool_calls), from the API the harness spoke.

    The prompt side needs nothing of this kind: a translated call keeps the chat request it
    became (``chat_request``), so only the answer is read back from the harness's shape.
    """
    response = call.response if isinstance(call.response, dict) else {}
    if call.api == "chat.completions":
        choices = response.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if isinstance(message, dict):
            return {"content": message.get("content"), **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})}
    elif call.api == "anthropic.messages":
        if isinstance(response.get("content"), list):
            return _messages_reply(response["content"])
    elif call.api == "responses":
        if isinstance(response.get("output"), list):
            return _responses_reply(response["output"], call)
    else:
        raise TextCallError(
            f"session {call.session_id} call {call.call_index} is a text-only {call.api} call: only chat-completions, "
            "Anthropic Messages and Responses calls can be tokenized; record the teacher through a harness that speaks one of them"
        )
    raise TextCallError(f"session {call.session_id} call {call.call_index} holds no answer message to tokenize")


def _messages_reply(blocks: list[Any]) -> dict[str, Any]:
    # As the proxy's Messages surface maps a chat answer: text blocks are the content, each
    # tool_use block a tool call whose id the harness echoes in its tool_result.
    texts = [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    calls = [
        {"id": b.get("id"), "type": "function", "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    return {"content": "".join(texts) or None, **({"tool_calls": calls} if calls else {})}


def _responses_reply(output: list[Any], call: RecordedCall) -> dict[str, Any]:
    """A Response's output items as the one assistant message they are.

    Read by the proxy's own translation of input items, the way the harness's next request
    replays these items: the answer is tokenized exactly as the next prompt holds it
    (function calls joined to the message's text, namespaced names flattened, a computer_call
    the ``computer`` tool call, reasoning dropped as the request side drops it).
    """
    from components.proxy.errors import ProxyError
    from components.proxy.surfaces import ResponsesSurface

    try:
        chat, _ = ResponsesSurface().to_upstream({"input": output})
    except ProxyError as err:
        raise TextCallError(f"session {call.session_id} call {call.call_index}'s response output cannot be read: {err}") from err
    messages = chat["messages"]
    if [m["role"] for m in messages] != ["assistant"]:
        raise TextCallError(
            f"session {call.session_id} call {call.call_index}'s response output is not one assistant turn "
            f"(it reads as {[m['role'] for m in messages]}): only a model's answer can be tokenized as its turn"
        )
    (message,) = messages
    return {"content": message.get("content"), **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})}
