"""Turn OpenAI chat messages into the prompt text and token ids the model sees.

Follows what vLLM does before it applies a HuggingFace chat template: text content parts
are joined with newlines, and the JSON-string ``arguments`` of assistant tool calls are
parsed into objects (tool-use templates such as Qwen2.5's expect a mapping there).

A vision-language model (``images`` given) gets each ``image_url`` part (a base64 data
URL) as Qwen2-VL's image marker in its place among the text parts, and its bytes in
``images``, in prompt order, for the processor (components/engine/_vision.py).

The tiny text model reads no pixels: an image part becomes a placeholder text,
``<|image:`` + the first 16 hex digits of the SHA-256 of the image bytes + ``|>``: the
prompt differs per image, the same image always gives the same token ids, and the whole
multimodal pipeline (harness, proxy, records, trainer rows) runs on a CPU with a text
model. docs/engine.md documents both.
"""

from __future__ import annotations

import binascii
import hashlib
import json
from typing import Any

from components.engine._protocol import ApiError
from components.engine.tiny_vl_model import IMAGE_MARKER

IMAGE_PLACEHOLDER = "<|image:{digest}|>"

_END_OF_TURN = "<|im_end|>"


def normalize_messages(messages: list[dict[str, Any]], images: list[bytes] | None = None) -> list[dict[str, Any]]:
    """Return template-ready copies of the request's messages; ApiError if malformed.

    With ``images`` (a vision-language model), image parts become the image marker and
    their bytes are appended to ``images``; without, the hash placeholder."""
    return [_normalize(index, message, images) for index, message in enumerate(messages)]


def _normalize(index: int, message: Any, images: list[bytes] | None) -> dict[str, Any]:
    where = f"messages[{index}]"
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise ApiError(f"`{where}` must be an object with a string `role`", param=where)
    out = dict(message)
    out["content"] = _text_content(out.get("content"), where, images)
    if out.get("tool_calls"):
        out["tool_calls"] = [_parse_tool_call(tc, f"{where}.tool_calls[{i}]") for i, tc in enumerate(out["tool_calls"])]
    return out


def _text_content(content: Any, where: str, images: list[bytes] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "image_url":
                data = image_bytes(part.get("image_url"), f"{where}.content[{i}]", f"{where}.content")
                if images is None:
                    texts.append(IMAGE_PLACEHOLDER.format(digest=hashlib.sha256(data).hexdigest()[:16]))
                else:
                    images.append(data)
                    texts.append(IMAGE_MARKER)
            elif isinstance(part, str):
                texts.append(part)
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise ApiError(
                    f"`{where}.content[{i}]` is a {kind!r} part; the dev engine reads text and image_url parts",
                    param=f"{where}.content",
                )
        return "\n".join(texts)
    raise ApiError(f"`{where}.content` must be a string or a list of text parts", param=f"{where}.content")


def image_bytes(image_url: Any, where: str, param: str) -> bytes:
    """The bytes of an image part's base64 data URL; ApiError for anything else."""
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    header, comma, payload = url.partition(",") if isinstance(url, str) else ("", "", "")
    if not (header.startswith("data:") and header.endswith(";base64") and comma):
        raise ApiError(
            f"`{where}` must hold a base64 data URL (data:image/png;base64,...): the dev engine fetches no URLs",
            param=param,
        )
    try:
        return binascii.a2b_base64(payload, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise ApiError(f"`{where}` is not valid base64 ({exc})", param=param) from None


def _parse_tool_call(tool_call: Any, where: str) -> dict[str, Any]:
    function = tool_call.get("function") if isinstance(tool_call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ApiError(f"`{where}` must hold a `function` with a string `name`", param=where)
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ApiError(f"`{where}.function.arguments` is not valid JSON ({exc})", param=where) from None
    elif arguments is None:
        arguments = {}
    return {**tool_call, "function": {**function, "arguments": arguments}}


def render_chat(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    add_generation_prompt: bool = True,
    continue_final_message: bool = False,
) -> str:
    """Apply the model's chat template; template failures become a 400 naming the cause."""
    try:
        return tokenizer.apply_chat_template(
            messages,
            tools=tools,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
        )
    except ApiError:
        raise
    except Exception as exc:  # jinja errors, bad message shapes the template trips on
        raise ApiError(f"the chat template could not render these messages: {exc}", param="messages") from None


def encode(tokenizer: Any, text: str, *, add_special_tokens: bool = False) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=add_special_tokens)


def scripted_reply_ids(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    reply: dict[str, Any],
) -> list[int]:
    """Token ids of ``reply`` exactly as the template writes an assistant turn, up to and
    including the end-of-turn token, so forcing them reproduces a real model turn."""
    prompt = render_chat(tokenizer, messages, tools, add_generation_prompt=True)
    full = render_chat(tokenizer, [*messages, reply], tools, add_generation_prompt=False)
    if not full.startswith(prompt):
        raise ApiError("the chat template renders the scripted turn inconsistently with the prompt")
    turn = full[len(prompt) :]
    end = turn.find(_END_OF_TURN)
    if end >= 0:
        turn = turn[: end + len(_END_OF_TURN)]
    return encode(tokenizer, turn)
