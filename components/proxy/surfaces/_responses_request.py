"""OpenAI Responses request -> engine chat-completions request.

Rules (docs/proxy.md has the table): ``instructions`` becomes the first system message;
``input`` items become chat messages in order (``developer`` -> ``system``; a
``function_call`` joins the assistant message right before it, as the model produced them
in one turn; ``function_call_output`` -> ``tool``). ``input_image`` parts of user messages
become ``image_url`` parts; images in a ``function_call_output`` or a
``computer_call_output`` (computer-use screenshots) go to a user message after the tool
outputs, since chat tool messages carry text. Function tools become chat function
tools; a ``namespace`` tool is flattened into ``<namespace>__<name>`` functions (mapped
back on the way out); a ``computer_use_preview`` tool becomes the function ``computer``,
a ``computer_call`` its assistant tool call and a ``computer_call_output`` its tool
message (``_computer.py``); other tool types (web_search, custom, ...) are dropped and noted.
"""

from __future__ import annotations

from typing import Any

from components.proxy.errors import bad_request
from components.proxy.surfaces._checks import list_at, object_at, string_at
from components.proxy.surfaces._computer import (
    COMPUTER,
    RESPONSES_TOOL_TYPES,
    arguments_of,
    output_text,
    responses_function,
)
from components.proxy.surfaces._parts import ChatContent, image_part
from components.proxy.surfaces.base import TranslationNotes, pass_through

_TRANSLATED = frozenset(
    {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens"}
    | {"temperature", "top_p", "stream"}
)
_PASSED = (
    ("max_output_tokens", "max_tokens"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("parallel_tool_calls", "parallel_tool_calls"),
)
_TEXT_PARTS = ("input_text", "output_text", "text")
_IMAGE_PARTS = ("input_image", "computer_screenshot")
_OUTPUT_ITEMS = ("function_call_output", "computer_call_output")
_NAMESPACE_JOIN = "__"
_CHAT_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_FUNCTION_FIELDS = frozenset({"type", "name", "description", "parameters"})
_NO_PARAMETERS = {"type": "object", "properties": {}}


def tool_names(tools: Any) -> dict[str, tuple[str | None, str]]:
    """Chat function name -> (namespace, name) for every function tool the request declares."""
    names: dict[str, tuple[str | None, str]] = {}
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function" and isinstance(tool.get("name"), str):
            names.setdefault(tool["name"], (None, tool["name"]))
        elif tool.get("type") == "namespace" and isinstance(tool.get("name"), str):
            for inner in tool.get("tools") if isinstance(tool.get("tools"), list) else ():
                if isinstance(inner, dict) and inner.get("type") == "function" and isinstance(inner.get("name"), str):
                    names.setdefault(flat_name(tool["name"], inner["name"]), (tool["name"], inner["name"]))
    return names


def flat_name(namespace: str | None, name: str) -> str:
    return name if namespace is None else f"{namespace}{_NAMESPACE_JOIN}{name}"


def to_chat(request: dict[str, Any]) -> tuple[dict[str, Any], TranslationNotes]:
    if request.get("conversation") is not None:
        raise bad_request(
            "'conversation' is not supported: the proxy keeps no conversation objects; send the whole "
            "conversation in 'input', or continue a response with 'previous_response_id'",
            param="conversation",
        )
    notes = TranslationNotes()
    messages: list[dict[str, Any]] = []
    if request.get("instructions") is not None:
        messages.append({"role": "system", "content": string_at(request["instructions"], "instructions")})
    items = request["input"]
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    pending: list[dict[str, Any]] = []  # images of tool outputs, for a user message after them
    for index, item in enumerate(items):
        kind = item.get("type", "message" if "role" in item else None) if isinstance(item, dict) else None
        if pending and kind not in _OUTPUT_ITEMS:
            messages.append({"role": "user", "content": pending})
            pending = []
        _item(item, f"input[{index}]", messages, pending, notes)
    if pending:
        messages.append({"role": "user", "content": pending})
    chat: dict[str, Any] = {"model": request.get("model"), "messages": messages}
    pass_through(request, chat, _PASSED)
    tools = _tools(request.get("tools"), notes)
    if tools:
        chat["tools"] = tools
    _tool_choice(request.get("tool_choice"), chat, notes)
    notes.note_untranslated(request, _TRANSLATED)
    return chat, notes


def _item(
    item: Any, path: str, messages: list[dict[str, Any]], pending: list[dict[str, Any]], notes: TranslationNotes
) -> None:
    item = object_at(item, path)
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or role not in _CHAT_ROLES:  # a list or object is unhashable
            raise bad_request(f"'{path}.role' must be 'user', 'assistant', 'system' or 'developer', got {role!r}", param="input")
        if role == "developer":
            notes.mapped.append(f"{path} role developer -> system")
        content = _content(item.get("content"), f"{path}.content", notes, images=role == "user")
        messages.append({"role": _CHAT_ROLES[role], "content": content.value()})
    elif kind == "function_call":
        namespace = item.get("namespace")
        if namespace is not None:
            string_at(namespace, f"{path}.namespace")
        name = flat_name(namespace, string_at(item.get("name"), f"{path}.name"))
        _assistant_call(messages, item, path, name, string_at(item.get("arguments", ""), f"{path}.arguments"))
    elif kind == "computer_call":
        # The engine's call of the function the computer tool became, as it made it.
        action = object_at(item.get("action"), f"{path}.action")
        _assistant_call(messages, item, path, COMPUTER, arguments_of(action))
        notes.mapped.append(f"{path} computer_call -> assistant tool call {COMPUTER!r}")
        if item.get("pending_safety_checks"):
            notes.ignored.append(f"{path}.pending_safety_checks")
    elif kind == "function_call_output":
        texts = ChatContent()
        for part in _content(item.get("output", ""), f"{path}.output", notes, images=True).parts():
            if part["type"] == "text":
                texts.text(part["text"])
            else:
                pending.append(part)
                notes.mapped.append(f"{path}.output image -> image_url part of a user message after the tool outputs")
        call_id = string_at(item.get("call_id"), f"{path}.call_id")
        messages.append({"role": "tool", "tool_call_id": call_id, "content": texts.value()})
    elif kind == "computer_call_output":
        # The tool message answers the computer_call's tool call; the screenshot, which a chat
        # tool message cannot carry, is what the model sees next, in the user message after.
        output = item.get("output")
        if isinstance(output, str):  # Stagehand's answer when it could not even take a screenshot
            text = output
        else:
            output = object_at(output, f"{path}.output")
            text = output_text(output)
            if output.get("type") in _IMAGE_PARTS and isinstance(output.get("image_url"), str):
                pending.append(image_part(output["image_url"], output.get("detail")))
                notes.mapped.append(f"{path} computer_call_output screenshot -> image_url part of a user message")
            else:
                notes.dropped.append(f"{path}.output (no image_url)")
        if item.get("acknowledged_safety_checks"):
            notes.ignored.append(f"{path}.acknowledged_safety_checks")
        call_id = string_at(item.get("call_id"), f"{path}.call_id")
        if _called(messages, call_id):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            notes.mapped.append(f"{path} computer_call_output -> tool message")
        else:  # a tool message answering no call would break the chat template's turn order
            notes.dropped.append(f"{path} tool message (no computer_call {call_id!r} before it)")
    else:  # reasoning, item_reference, custom or hosted tool calls: nothing the engine can read
        notes.dropped.append(f"{path} ({kind})")


def _assistant_call(messages: list[dict[str, Any]], item: dict[str, Any], path: str, name: str, arguments: str) -> None:
    call = {
        "id": string_at(item.get("call_id"), f"{path}.call_id"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":  # the same model turn as the text before it
        last.setdefault("tool_calls", []).append(call)
        last["content"] = last["content"] or None
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def _called(messages: list[dict[str, Any]], call_id: str) -> bool:
    """Whether an assistant message so far made the tool call ``call_id``."""
    return any(
        call.get("id") == call_id for message in messages if message["role"] == "assistant"
        for call in message.get("tool_calls") or ()
    )  # fmt: skip


def _content(content: Any, path: str, notes: TranslationNotes, *, images: bool) -> ChatContent:
    """Text and (where chat allows them, in user messages) image parts of an item's content."""
    built = ChatContent()
    if isinstance(content, str):
        built.text(content)
        return built
    for index, part in enumerate(list_at(content, path)):
        where = f"{path}[{index}]"
        part = object_at(part, where)
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            built.text(string_at(part.get("text"), f"{where}.text"))
        elif images and kind == "input_image" and isinstance(part.get("image_url"), str):
            built.image(part["image_url"], part.get("detail"))
        else:  # input_image by file_id, input_file, refusal, ...
            notes.dropped.append(f"{where} ({kind})")
    return built


def _tools(tools: Any, notes: TranslationNotes) -> list[dict[str, Any]]:
    if tools is None:
        return []
    chat_tools: list[dict[str, Any]] = []
    for index, tool in enumerate(list_at(tools, "tools")):
        where = f"tools[{index}]"
        tool = object_at(tool, where)
        kind = tool.get("type")
        if kind == "function":
            chat_tools.append(_function(tool, None, where, notes))
        elif kind == "namespace":
            namespace = string_at(tool.get("name"), f"{where}.name")
            inner = list_at(tool.get("tools"), f"{where}.tools")
            flattened = []
            for position, member in enumerate(inner):
                member = object_at(member, f"{where}.tools[{position}]")
                if member.get("type") == "function":
                    flattened.append(_function(member, namespace, f"{where}.tools[{position}]", notes))
                else:
                    notes.dropped.append(f"{where}.tools[{position}] (type {member.get('type')})")
            chat_tools.extend(flattened)
            pattern = flat_name(namespace, "<name>")
            notes.mapped.append(f"{where} namespace {namespace!r} -> {len(flattened)} functions named {pattern}")
        elif kind in RESPONSES_TOOL_TYPES:
            chat_tools.append(responses_function(tool))
            notes.mapped.append(f"{where} {kind} -> function {COMPUTER!r} (its calls come back as computer_call items)")
        else:  # web_search, file_search, custom (freeform), local_shell, ...: not function calls the engine can make
            notes.dropped.append(f"{where} (type {kind})")
    return chat_tools


def _function(tool: dict[str, Any], namespace: str | None, where: str, notes: TranslationNotes) -> dict[str, Any]:
    function: dict[str, Any] = {"name": flat_name(namespace, string_at(tool.get("name"), f"{where}.name"))}
    if tool.get("description") is not None:
        function["description"] = string_at(tool["description"], f"{where}.description")
    parameters = tool.get("parameters")
    function["parameters"] = _NO_PARAMETERS if parameters is None else object_at(parameters, f"{where}.parameters")
    # strict would make vLLM constrain decoding: the sampled tokens would no longer be the policy's.
    notes.ignored.extend(f"tools.{key}" for key in tool if key not in _FUNCTION_FIELDS)
    return {"type": "function", "function": function}


def _tool_choice(choice: Any, chat: dict[str, Any], notes: TranslationNotes) -> None:
    if choice is None:
        return
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise bad_request(
                f"'tool_choice' must be 'auto', 'none', 'required' or an object, got {choice!r}", param="tool_choice"
            )
    else:
        object_at(choice, "tool_choice")
    if choice == "none":
        chat["tool_choice"] = "none"
        return
    if "tools" not in chat:  # vLLM refuses a tool_choice without tools
        notes.dropped.append("tool_choice (no tools the engine can take)")
        return
    if isinstance(choice, str):
        chat["tool_choice"] = choice
        return
    kind = choice.get("type")
    if kind == "function":
        namespace = choice.get("namespace")
        name = flat_name(namespace if isinstance(namespace, str) else None, string_at(choice.get("name"), "tool_choice.name"))
        chat["tool_choice"] = {"type": "function", "function": {"name": name}}
    elif kind == "allowed_tools" and choice.get("mode") in ("auto", "required"):
        chat["tool_choice"] = choice["mode"]
        notes.mapped.append(f"tool_choice allowed_tools -> {choice['mode']} (every declared tool stays allowed)")
    else:  # a hosted tool (web_search, ...) the engine does not have
        notes.dropped.append(f"tool_choice (type {kind})")
