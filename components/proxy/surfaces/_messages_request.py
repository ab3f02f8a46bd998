"""Anthropic Messages request -> engine chat-completions request.

Rules (docs/proxy.md has the table): ``system`` becomes the first system message; text
blocks are joined with newlines (as vLLM joins text parts); ``tool_use`` blocks become the
assistant's ``tool_calls``; ``tool_result`` blocks become ``tool`` messages placed before
the rest of their user message; a mid-conversation ``system`` message stays a system
message. Images (base64 or URL sources) become ``image_url`` parts, base64 ones as data
URLs; an image inside a ``tool_result`` moves to the user message after the tool messages
(chat tool messages carry text). The computer-use tool (``computer_20250124``,
``computer_20241022``) becomes the function ``computer`` with Anthropic's documented input
schema (``_computer.py``), so the engine's calls come back as ``tool_use`` blocks named
``computer``. What the engine cannot take (documents, thinking blocks, other server tools)
is dropped and noted; top-level fields without a chat equivalent are noted
as ignored.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.proxy.errors import bad_request
from components.proxy.surfaces._checks import list_at, object_at, string_at
from components.proxy.surfaces._computer import ANTHROPIC_TOOL_TYPES, COMPUTER, anthropic_function
from components.proxy.surfaces._parts import ChatContent, image_part
from components.proxy.surfaces.base import TranslationNotes, pass_through

# Top-level fields that are translated; every other field is recorded as ignored.
_TRANSLATED = frozenset(
    {"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p", "top_k"}
    | {"tools", "tool_choice", "stream"}
)
_SAMPLING = (("temperature", "temperature"), ("top_p", "top_p"), ("top_k", "top_k"), ("stop_sequences", "stop"))
_TOOL_FIELDS = frozenset({"name", "description", "input_schema", "type"})
_CUSTOM_TOOL_TYPES = (None, "custom")
_TEXT_JOIN = "\n"
ERROR_PREFIX = "Error: "  # how a tool_result with is_error reaches a template that has no such flag


def to_chat(request: dict[str, Any]) -> tuple[dict[str, Any], TranslationNotes]:
    notes = TranslationNotes()
    messages = _system(request.get("system"), notes)
    for index, message in enumerate(request["messages"]):
        messages.extend(_message(message, f"messages[{index}]", notes))
    chat: dict[str, Any] = {"model": request.get("model"), "messages": messages, "max_tokens": request["max_tokens"]}
    if messages and messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls"):
        # A prefill: Anthropic continues the final assistant text; vLLM does so when told.
        chat["continue_final_message"], chat["add_generation_prompt"] = True, False
        notes.mapped.append(f"messages[{len(request['messages']) - 1}] final assistant text -> continue_final_message")
    pass_through(request, chat, _SAMPLING)
    tools = _tools(request.get("tools"), notes)
    if tools:
        chat["tools"] = tools
    _tool_choice(request.get("tool_choice"), chat, notes)
    notes.note_untranslated(request, _TRANSLATED)
    return chat, notes


def _system(system: Any, notes: TranslationNotes) -> list[dict[str, Any]]:
    if system is None:
        return []
    text = _text_of(system, "system", notes, dropping=False)
    return [{"role": "system", "content": text}]


def _text_of(content: Any, path: str, notes: TranslationNotes, *, dropping: bool = True) -> str:
    """Text of a string or a list of text blocks; other blocks are dropped (or refused)."""
    if isinstance(content, str):
        return content
    texts = []
    for index, block in enumerate(list_at(content, path)):
        where = f"{path}[{index}]"
        block = object_at(block, where)
        if block.get("type") == "text":
            texts.append(string_at(block.get("text"), f"{where}.text"))
            _note_extras(block, ("type", "text"), notes)
        elif dropping:
            notes.dropped.append(f"{where} ({block.get('type')})")
        else:
            raise bad_request(f"'{where}' must be a text block, got type {block.get('type')!r}", param=path)
    return _TEXT_JOIN.join(texts)


def _note_extras(block: dict[str, Any], known: tuple[str, ...], notes: TranslationNotes) -> None:
    for key in block:
        if key not in known:
            notes.ignored.append(key if key == "cache_control" else f"{block.get('type')}.{key}")


def _blocks(message: dict[str, Any], path: str) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list_at(content, f"{path}.content")


def _message(message: Any, path: str, notes: TranslationNotes) -> list[dict[str, Any]]:
    message = object_at(message, path)
    role = message.get("role")
    if role == "assistant":
        return [_assistant(_blocks(message, path), path, notes)]
    if role == "user":
        return _user(_blocks(message, path), path, notes)
    if role == "system":  # Claude Code's mid-conversation system message (a beta feature)
        notes.mapped.append(f"{path} role system -> chat system message")
        return [{"role": "system", "content": _text_of(message.get("content"), f"{path}.content", notes)}]
    raise bad_request(f"'{path}.role' must be 'user', 'assistant' or 'system', got {role!r}", param="messages")


def _assistant(blocks: list[Any], path: str, notes: TranslationNotes) -> dict[str, Any]:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        where = f"{path}.content[{index}]"
        block = object_at(block, where)
        kind = block.get("type")
        if kind == "text":
            texts.append(string_at(block.get("text"), f"{where}.text"))
            _note_extras(block, ("type", "text"), notes)
        elif kind == "tool_use":
            tool_calls.append(_tool_call(block, where, notes))
        else:  # thinking, redacted_thinking, server tool blocks: nothing the engine produced or can read
            notes.dropped.append(f"{where} ({kind})")
    message: dict[str, Any] = {"role": "assistant", "content": _TEXT_JOIN.join(texts) if texts or not tool_calls else None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _tool_call(block: dict[str, Any], where: str, notes: TranslationNotes) -> dict[str, Any]:
    name = string_at(block.get("name"), f"{where}.name")
    arguments = object_at(block.get("input", {}), f"{where}.input")
    _note_extras(block, ("type", "id", "name", "input"), notes)
    return {
        "id": string_at(block.get("id"), f"{where}.id"),
        "type": "function",
        "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
    }


def _user(blocks: list[Any], path: str, notes: TranslationNotes) -> list[dict[str, Any]]:
    # Chat wants tool results right after the assistant turn that called the tools, so they
    # come first; Anthropic requires them first in the user message anyway.
    results: list[dict[str, Any]] = []
    content = ChatContent()
    for index, block in enumerate(blocks):
        where = f"{path}.content[{index}]"
        block = object_at(block, where)
        kind = block.get("type")
        if kind == "tool_result":
            result, images = _tool_result(block, where, notes)
            results.append(result)
            content.images(images)
        elif kind == "text":
            content.text(string_at(block.get("text"), f"{where}.text"))
            _note_extras(block, ("type", "text"), notes)
        elif kind == "image" and (url := _image_url(block, where, notes)) is not None:
            content.image(url)
        else:  # document, search results, ...: the engine reads text and images only
            notes.dropped.append(f"{where} ({kind})")
    if content or not results:
        results.append({"role": "user", "content": content.value()})
    return results


def _image_url(block: dict[str, Any], where: str, notes: TranslationNotes) -> str | None:
    """The chat image URL of an image block: a data URL for base64 data; None for a file source."""
    source = object_at(block.get("source"), f"{where}.source")
    _note_extras(block, ("type", "source"), notes)
    if source.get("type") == "base64":
        media_type = string_at(source.get("media_type"), f"{where}.source.media_type")
        return f"data:{media_type};base64," + string_at(source.get("data"), f"{where}.source.data")
    if source.get("type") == "url":
        return string_at(source.get("url"), f"{where}.source.url")
    return None


def _tool_result(block: dict[str, Any], where: str, notes: TranslationNotes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message, and the image parts of the result (for the user message that follows)."""
    content = block.get("content", "")
    images: list[dict[str, Any]] = []
    if isinstance(content, str):
        text = content
    else:
        texts = []
        for index, inner in enumerate(list_at(content, f"{where}.content")):
            inner_where = f"{where}.content[{index}]"
            inner = object_at(inner, inner_where)
            kind = inner.get("type")
            if kind == "text":
                texts.append(string_at(inner.get("text"), f"{inner_where}.text"))
                _note_extras(inner, ("type", "text"), notes)
            elif kind == "image" and (url := _image_url(inner, inner_where, notes)) is not None:
                images.append(image_part(url))
                notes.mapped.append(f"{inner_where} image in tool_result -> image_url part of the next user message")
            else:
                notes.dropped.append(f"{inner_where} ({kind})")
        text = _TEXT_JOIN.join(texts)
    is_error = block.get("is_error")
    if is_error is True:
        text = ERROR_PREFIX + text
        notes.mapped.append(f"{where} is_error -> content prefixed {ERROR_PREFIX!r}")
    _note_extras(block, ("type", "tool_use_id", "content", "is_error"), notes)
    message = {"role": "tool", "tool_call_id": string_at(block.get("tool_use_id"), f"{where}.tool_use_id"), "content": text}
    return message, images


def _tools(tools: Any, notes: TranslationNotes) -> list[dict[str, Any]]:
    if tools is None:
        return []
    chat_tools = []
    for index, tool in enumerate(list_at(tools, "tools")):
        where = f"tools[{index}]"
        tool = object_at(tool, where)
        if tool.get("type") in ANTHROPIC_TOOL_TYPES:
            chat_tools.append(anthropic_function(tool))
            notes.mapped.append(f"{where} {tool['type']} -> function {COMPUTER!r} with its documented input schema")
            continue
        if tool.get("type") not in _CUSTOM_TOOL_TYPES:  # server tools (web_search_..., bash_...) the engine cannot run
            notes.dropped.append(f"{where} (type {tool.get('type')})")
            continue
        function: dict[str, Any] = {"name": string_at(tool.get("name"), f"{where}.name")}
        if tool.get("description") is not None:
            function["description"] = string_at(tool["description"], f"{where}.description")
        function["parameters"] = object_at(tool.get("input_schema"), f"{where}.input_schema")
        notes.ignored.extend(key if key == "cache_control" else f"tools.{key}" for key in tool if key not in _TOOL_FIELDS)
        chat_tools.append({"type": "function", "function": function})
    return chat_tools


def _tool_choice(choice: Any, chat: dict[str, Any], notes: TranslationNotes) -> None:
    if choice is None:
        return
    choice = object_at(choice, "tool_choice")
    kind = choice.get("type")
    if choice.get("disable_parallel_tool_use") is True:
        chat["parallel_tool_calls"] = False
    if kind == "none":
        chat["tool_choice"] = "none"
        return
    if kind not in ("auto", "any", "tool"):
        raise bad_request(f"'tool_choice.type' must be 'auto', 'any', 'tool' or 'none', got {kind!r}", param="tool_choice")
    if "tools" not in chat:  # vLLM refuses a tool_choice without tools
        notes.dropped.append("tool_choice (no tools the engine can take)")
        return
    if kind == "auto":
        chat["tool_choice"] = "auto"
    elif kind == "any":
        chat["tool_choice"] = "required"
    else:
        chat["tool_choice"] = {"type": "function", "function": {"name": string_at(choice.get("name"), "tool_choice.name")}}
