"""A teacher's text-only calls as the token ids the student would have seen and written.

A teacher behind another API (proxy ``--teacher``) answers with text only, so its calls are
recorded without token ids (``text_only``). SFT gives them the ids of the student's own chat
template (``components.engine.chat_tokens``): the prompt as the student's engine renders the
conversation, the answer as its template writes an assistant turn. RL never trains on them:
their tokens were not sampled by any policy it could compute a ratio against.
"""

from __future__ import annotations

from typing import Any

from components.core.trajectory import RecordedCall, chat_request


class TextCallError(ValueError):
    """A text-only call that cannot be tokenized; the message names the call and the fix."""


def with_student_tokens(call: RecordedCall, tokenizer: Any) -> RecordedCall:
    """``call`` with token ids from ``tokenizer``'s chat template when it was recorded as text; else as it is."""
    from components.engine.chat_tokens import chat_token_ids

    if not call.text_only:
        return call
    if call.api != "chat.completions":
        raise TextCallError(
            f"session {call.session_id} call {call.call_index} is a text-only {call.api} call: only chat-completions "
            "teachers can be tokenized for now; record the teacher through a harness that speaks chat completions"
        )
    choices = (call.response or {}).get("choices") or [{}]
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise TextCallError(f"session {call.session_id} call {call.call_index} holds no answer message to tokenize")
    request = chat_request(call)
    reply = {"content": message.get("content"), **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})}
    prompt, completion = chat_token_ids(tokenizer, request, reply)
    return call.model_copy(
        update={
            "prompt_token_ids": prompt,
            "completion_token_ids": completion,
            "completion_logprobs": [0.0] * len(completion),
        }
    )
