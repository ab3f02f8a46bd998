"""The token ids the dev engine sees and writes for a chat, from its text alone.

A teacher that answers with text only (no token ids) leaves recordings SFT cannot train on
as they are. The student's engine would have rendered the same conversation with its chat
template and tokenized it, and written the teacher's answer as the template writes an
assistant turn: these functions do exactly what the engine's chat endpoint does
(``_routes.Routes._prepare_chat`` and a forced turn), so the ids match what the student
would have seen had it been the one answering (tests/components/trainer/test_text_calls.py).
"""

from __future__ import annotations

from typing import Any

from components.engine._chat_render import encode, normalize_messages, render_chat, scripted_reply_ids
from components.engine._protocol import ChatRequest, parse_body


def chat_token_ids(tokenizer: Any, request: dict[str, Any], reply: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(prompt ids, reply ids) of a chat-completions ``request`` and the assistant message
    ``reply`` to it: the prompt as the engine renders it, the reply as the template writes an
    assistant turn, end of turn included."""
    parsed = parse_body(ChatRequest, request)
    messages, tools = normalize_messages(parsed.messages), parsed.tool_dicts()
    text = render_chat(
        tokenizer,
        messages,
        tools,
        add_generation_prompt=parsed.add_generation_prompt,
        continue_final_message=parsed.continue_final_message,
    )
    prompt = encode(tokenizer, text, add_special_tokens=parsed.add_special_tokens)
    message = normalize_messages([{**reply, "role": "assistant"}])[0]
    return prompt, scripted_reply_ids(tokenizer, messages, tools, message)
