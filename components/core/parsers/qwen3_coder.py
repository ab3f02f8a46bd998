"""``qwen3_coder``: Qwen3-Coder's XML tool calls, as vLLM 0.32's parser of that name reads them.

    <tool_call>
    <function=NAME>
    <parameter=P>
    VALUE
    </parameter>
    </function>
    </tool_call>

A parameter's value loses one wrapping newline each side and is then typed by the tool's
JSON schema (``integer`` "12" -> 12, ``boolean`` "true" -> true, ``object`` and ``array``
as JSON; a value that does not fit, or a parameter the schema does not name, stays a
string). Text outside the calls is the content, stripped of surrounding whitespace once
a call was made. A ``<function=`` without ``<tool_call>`` before it is a call too, and a
call cut short still counts with the parameters it closed. Streamed, a call is announced
at its name and its arguments grow one closed parameter at a time.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from components.core.parsers._base import Call, PartialCall, StreamView, ToolCallFormat, content_end, partial_suffix

CALL_START, CALL_END = "<tool_call>", "</tool_call>"
FUNCTION, FUNCTION_END = "<function=", "</function>"
_PARAMETER = re.compile(r"<\s*parameter\s*=\s*([^>]*)>(.*?)(?:<\s*/\s*parameter\s*>|(?=<\s*parameter\s*=))", re.DOTALL)
# Schema types by the order vLLM tries them; aliases as vLLM spells them.
_PRIORITY = ("null", "integer", "number", "boolean", "object", "array", "string")
_ALIASES = {
    "str": "string", "text": "string", "varchar": "string", "char": "string", "enum": "string",
    "int": "integer", "int32": "integer", "int64": "integer", "uint": "integer", "uint32": "integer",
    "uint64": "integer", "long": "integer", "short": "integer", "unsigned": "integer", "float": "number",
    "float32": "number", "float64": "number", "double": "number", "bool": "boolean", "dict": "object",
    "arr": "array", "list": "array", "sequence": "array",
}  # fmt: skip


class Qwen3Coder(ToolCallFormat):
    name = "qwen3_coder"

    def extract(self, text: str, tools: list[dict[str, Any]] | None) -> tuple[str | None, list[Call]]:
        content, bodies = _split(text, final=True)
        calls = [call for body in bodies if (call := _call(body, tools, final=True)) is not None]
        if calls:
            content = content.strip()
        return content or None, calls

    def view(self, text: str, final: bool, tools: list[dict[str, Any]] | None) -> StreamView:
        _, bodies = _split(text, final)
        view = StreamView(content_end(text, final, CALL_START, FUNCTION))
        for body in bodies:
            call = _call(body, tools, final)
            if call is None:
                break
            view.calls.append(call)
        return view


def _split(text: str, final: bool) -> tuple[str, list[str]]:
    """(content, the text of each call from its function name on)."""
    content: list[str] = []
    bodies: list[str] = []
    pos = 0
    while True:
        starts = [at for at in (text.find(CALL_START, pos), text.find(FUNCTION, pos)) if at >= 0]
        if not starts:
            content.append(text[pos:])
            break
        at = min(starts)
        content.append(text[pos:at])
        function = text.find(FUNCTION, at)
        call_end = text.find(CALL_END, at)
        if function < 0 or (0 <= call_end < function):  # a <tool_call> with no function in it
            pos = call_end + len(CALL_END) if call_end >= 0 else len(text)
            continue
        body_start = function + len(FUNCTION)
        end = text.find(FUNCTION_END, body_start)
        if end < 0:
            body = text[body_start:]
            bodies.append(body if final else body[: len(body) - partial_suffix(body, FUNCTION_END)])
            break
        bodies.append(text[body_start:end] + FUNCTION_END)
        pos = end + len(FUNCTION_END)
        after = text[pos:].lstrip()
        if after.startswith(CALL_END):
            pos = len(text) - len(after) + len(CALL_END)
    return "".join(content), bodies


def _call(body: str, tools: list[dict[str, Any]] | None, final: bool) -> PartialCall | None:
    """The call in ``NAME>...``; None while its name is still being written."""
    close = body.find(">")
    if close < 0:
        return None
    name = body[:close].strip()
    closed = body.endswith(FUNCTION_END) or final
    properties = _properties(tools, name)
    pieces = []
    for match in _PARAMETER.finditer(body, close + 1):
        value = match.group(2)
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        typed = _typed(value, properties.get(match.group(1))) if properties else value
        pieces.append(f"{json.dumps(match.group(1), ensure_ascii=False)}: {json.dumps(typed, ensure_ascii=False)}")
    return PartialCall(name, "{" + ", ".join(pieces) + ("}" if closed else ""))


def _properties(tools: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    for tool in tools or ():
        function = tool.get("function") or {}
        if function.get("name") == name:
            return (function.get("parameters") or {}).get("properties") or {}
    return {}


def _types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return {"string"}
    types: set[str] = set()
    declared = schema.get("type")
    types.update([declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)])
    for value in schema.get("enum") or ():
        types.add(_json_type(value))
    for choice in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(choice) or ():
            types |= _types(option)
    return {_ALIASES.get(t.strip().lower(), t.strip().lower()) for t in types} or {"string"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array")):
        if isinstance(value, kind):
            return name
    return "object"


def _typed(value: str, schema: Any) -> Any:
    """``value`` as the first of the schema's types it fits, by vLLM's order; else the string."""
    types = _types(schema)
    for kind in _PRIORITY:
        if kind not in types:
            continue
        if kind == "string":
            return value
        if kind == "null" and value.lower() == "null":
            return None
        if kind == "integer":
            try:
                return int(value)
            except ValueError:
                continue
        if kind == "number":
            try:
                number = float(value)
            except ValueError:
                continue
            if math.isfinite(number):
                return int(number) if number == int(number) else number
        if kind == "boolean" and value.lower().strip() in ("true", "1", "false", "0"):
            return value.lower().strip() in ("true", "1")
        if kind in ("object", "array"):
            parsed = _json(value)
            if parsed is not _NOT_JSON:
                return parsed
    parsed = _json(value)
    return value if parsed is _NOT_JSON else parsed


_NOT_JSON = object()


def _json(value: str) -> Any:
    try:
        parsed = json.loads(value)
    except ValueError:
        return _NOT_JSON
    return parsed if _finite(parsed) else _NOT_JSON


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    return True
