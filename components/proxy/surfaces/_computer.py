"""Computer-use tools as function tools the engine can call, and the engine's calls back.

OpenAI's ``computer_use_preview`` and Anthropic's ``computer_20250124`` /
``computer_20241022`` are hosted tools: the harness declares them without a schema, and a
hosted model answers in the API's own shape (a Responses ``computer_call`` item, an
Anthropic ``tool_use`` block named ``computer``). The engine only knows chat function
tools, so each becomes a function ``computer`` whose parameters are the API's documented
action schema and whose description names the display size. What the engine calls comes
back in the API's own shape; the surfaces do that with the helpers here.

Responses: the function's arguments are the ``action`` object itself (``{"type":
"click", "x": 10, "y": 20, "button": "left"}``); a ``computer_call`` in a later request
becomes that assistant tool call again (arguments written as JSON with ``json.dumps``'
default separators, which is how the chat templates' models write them), and its
``computer_call_output`` a tool message (current URL, error) plus the screenshot.
"""

from __future__ import annotations

import json
from typing import Any

COMPUTER = "computer"  # the function name in both APIs (Anthropic requires this name)
RESPONSES_TOOL_TYPES = ("computer_use_preview",)
ANTHROPIC_TOOL_TYPES = ("computer_20250124", "computer_20241022")

_POINT = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}
# OpenAI's documented computer actions (the ``action`` of a computer_call), one schema for all.
RESPONSES_ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {
            "type": "string",
            "enum": ["click", "double_click", "scroll", "type", "keypress", "wait", "screenshot", "drag", "move"],
            "description": "The action to perform.",
        },
        "button": {
            "type": "string",
            "enum": ["left", "right", "wheel", "back", "forward"],
            "description": "click: the mouse button.",
        },
        "x": {"type": "integer", "description": "click, double_click, scroll, move: pixels from the left edge."},
        "y": {"type": "integer", "description": "click, double_click, scroll, move: pixels from the top edge."},
        "scroll_x": {"type": "integer", "description": "scroll: horizontal pixels."},
        "scroll_y": {"type": "integer", "description": "scroll: vertical pixels (positive scrolls down)."},
        "text": {"type": "string", "description": "type: the text to type."},
        "keys": {"type": "array", "items": {"type": "string"}, "description": "keypress: keys pressed together."},
        "path": {"type": "array", "items": _POINT, "description": "drag: the points of the drag, start to end."},
    },
    "required": ["type"],
}

_COORDINATE = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
_ACTIONS_20241022 = [
    "key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click", "double_click",
    "screenshot", "cursor_position",
]  # fmt: skip
_ACTIONS_20250124 = [
    "key", "hold_key", "type", "cursor_position", "mouse_move", "left_mouse_down", "left_mouse_up", "left_click",
    "left_click_drag", "right_click", "middle_click", "double_click", "triple_click", "scroll", "wait", "screenshot",
]  # fmt: skip


def _anthropic_schema(actions: list[str], *, newer: bool) -> dict[str, Any]:
    """Anthropic's documented input schema of the computer tool version."""
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": actions, "description": "The action to perform."},
        "coordinate": {**_COORDINATE, "description": "(x, y): pixels from the left and top edges."},
        "text": {"type": "string", "description": "type: the text; key: the key or combination (xdotool syntax)."},
    }
    if newer:
        properties |= {
            "duration": {"type": "number", "description": "hold_key, wait: seconds."},
            "scroll_amount": {"type": "integer", "description": "scroll: how many wheel clicks."},
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "start_coordinate": {**_COORDINATE, "description": "left_click_drag: where the drag starts."},
        }
    return {"type": "object", "properties": properties, "required": ["action"]}


ANTHROPIC_SCHEMAS = {
    "computer_20250124": _anthropic_schema(_ACTIONS_20250124, newer=True),
    "computer_20241022": _anthropic_schema(_ACTIONS_20241022, newer=False),
}


def _description(width: Any, height: Any, where: str) -> str:
    size = f"{width}x{height} pixels" if isinstance(width, int) and isinstance(height, int) else "of unknown size"
    return f"Use a mouse and keyboard to interact with {where}, and take screenshots. The screen is {size}."


def responses_function(tool: dict[str, Any]) -> dict[str, Any]:
    """The chat function tool for a Responses ``computer_use_preview`` tool."""
    environment = tool.get("environment")
    where = f"a {environment} computer" if isinstance(environment, str) else "a computer"
    description = _description(tool.get("display_width"), tool.get("display_height"), where)
    function = {"name": COMPUTER, "description": description, "parameters": RESPONSES_ACTION_SCHEMA}
    return {"type": "function", "function": function}


def anthropic_function(tool: dict[str, Any]) -> dict[str, Any]:
    """The chat function tool for an Anthropic ``computer_2025...`` tool (its name is always ``computer``)."""
    description = _description(tool.get("display_width_px"), tool.get("display_height_px"), "a computer")
    function = {"name": COMPUTER, "description": description, "parameters": ANTHROPIC_SCHEMAS[tool["type"]]}
    return {"type": "function", "function": function}


def declares_computer(tools: Any) -> bool:
    """Whether a Responses request declares the computer tool (so ``computer`` calls are computer_calls)."""
    return any(isinstance(t, dict) and t.get("type") in RESPONSES_TOOL_TYPES for t in tools or ())


def action_of(arguments: Any) -> dict[str, Any] | None:
    """The computer_call ``action`` in the engine's arguments; None when they are not one."""
    try:
        action = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        return None
    return action if isinstance(action, dict) and isinstance(action.get("type"), str) else None


def arguments_of(action: dict[str, Any]) -> str:
    """The chat tool-call arguments for a computer_call's action (the inverse of ``action_of``)."""
    return json.dumps(action, ensure_ascii=False)


def computer_call_item(item_id: str, call_id: str, action: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "computer_call", "call_id": call_id, "action": action,
            "pending_safety_checks": [], "status": status}  # fmt: skip


def output_text(output: dict[str, Any]) -> str:
    """What a computer_call_output says besides its screenshot: the page's URL, an error."""
    lines = []
    if isinstance(output.get("current_url"), str):
        lines.append(f"Current URL: {output['current_url']}")
    if isinstance(output.get("error"), str):
        lines.append(f"Error: {output['error']}")
    return "\n".join(lines)
