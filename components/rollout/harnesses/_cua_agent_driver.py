"""Runs cua-agent's Qwen-VL loop headless for one rollout; executed by the Python of cua-agent's venv.

It imports nothing from OpenForge (that venv has only cua-agent), reads its settings from
the JSON file named on the command line (written by ``cua_agent.py``), drives the X
display named by ``DISPLAY`` (the runner's desktop) through xdotool and Pillow, and writes
what the agent ended with to ``settings["result_file"]``.

cua-agent's loop runs until the model answers without a tool call; the model's own
``terminate`` and ``answer`` actions reach the computer as unknown actions and the loop
goes on (docs/harnesses.md, "cua-agent"). The driver therefore stops at the first of them. It sets no step
limit of its own: the runner counts the recorded calls and stops a runaway past
``harness.max_turns`` (status ``step_limit``). Exit 0 once the loop ended, 1 when it crashed.
"""

import asyncio
import io
import json
import math
import os
import re
import subprocess
import sys
import types
from pathlib import Path

# The model's ways of saying it is finished (Qwen-VL's computer-use actions).
_FINAL_ACTIONS = ("terminate", "answer")
# What cua-agent puts in the assistant's mouth when it injects the first screenshot: its
# words, not the model's, so never the final answer.
_MADE_UP = "Taking a screenshot to see the current computer screen."
_BUTTONS = {"left": "1", "middle": "2", "wheel": "2", "right": "3", "back": "8", "forward": "9"}
# Chat-completions key names (Qwen-VL) to X keysyms; anything else is passed as written.
_KEYSYMS = {"enter": "Return", "return": "Return", "esc": "Escape", "escape": "Escape", "ctrl": "ctrl",
            "control": "ctrl", "alt": "alt", "shift": "shift", "tab": "Tab", "backspace": "BackSpace",
            "delete": "Delete", "space": "space", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
            "home": "Home", "end": "End", "pageup": "Prior", "pagedown": "Next", "super": "super", "cmd": "super"}


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen-VL's image-size rule (qwen-vl-utils 0.0.14's ``smart_resize``), the one function cua-agent uses from it.

    A stand-in, not the package: qwen-vl-utils imports torch and torchvision when it is
    imported (a 5.6 GB venv of CUDA builds) for this arithmetic. cua-agent 0.9.1 calls it
    with both bounds set, to scale the model's 0..1000 coordinates to the resized
    screenshot; 1280x800 (the default desktop) is divisible by 32, so the size is unchanged.
    Limit: the package's aspect-ratio check (> 200:1 raises) is left out; no screen has one.
    """
    h_bar, w_bar = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar, w_bar = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


sys.modules["qwen_vl_utils"] = types.SimpleNamespace(smart_resize=smart_resize)  # type: ignore[assignment]


def _xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=True, capture_output=True, timeout=30)


def _screenshot() -> bytes:
    from PIL import ImageGrab

    buffer = io.BytesIO()
    ImageGrab.grab(xdisplay=os.environ["DISPLAY"]).save(buffer, format="PNG")
    return buffer.getvalue()


def _click(x: int, y: int, button: str = "left") -> None:
    _xdotool("mousemove", "--sync", str(x), str(y), "click", _BUTTONS.get(button, "1"))


def _scroll(x: int, y: int, scroll_x: int, scroll_y: int) -> None:
    # Qwen-VL: positive pixels scroll up. X buttons 4/5 scroll up/down, 6/7 left/right.
    _xdotool("mousemove", "--sync", str(x), str(y))
    for amount, (back, forth) in ((scroll_y, ("4", "5")), (scroll_x, ("6", "7"))):
        clicks = max(1, abs(amount) // 100) if amount else 0
        if clicks:
            _xdotool("click", "--repeat", str(clicks), back if amount > 0 else forth)


def _drag(path: list) -> None:
    start, *rest = path
    _xdotool("mousemove", "--sync", str(start["x"]), str(start["y"]), "mousedown", "1")
    for point in rest:
        _xdotool("mousemove", "--sync", str(point["x"]), str(point["y"]))
    _xdotool("mouseup", "1")


def computer() -> dict:
    """cua-agent's custom computer: a dict of callables acting on $DISPLAY."""
    from PIL import Image

    size = Image.open(io.BytesIO(_screenshot())).size
    return {
        "environment": "linux",
        "dimensions": size,
        "screenshot": _screenshot,
        "click": _click,
        "double_click": lambda x, y: _xdotool("mousemove", "--sync", str(x), str(y), "click", "--repeat", "2", "1"),
        "move": lambda x, y: _xdotool("mousemove", "--sync", str(x), str(y)),
        "type": lambda text: _xdotool("type", "--delay", "5", "--", text),
        "keypress": lambda keys: _xdotool("key", "--", "+".join(_KEYSYMS.get(k.lower(), k) for k in keys)),
        "scroll": _scroll,
        "drag": _drag,
    }


def _text_of(item: dict) -> str:
    return "".join(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))


class _ModelReplies:
    """A cua-agent callback keeping what the model itself said in its last reply.

    The loop keeps only the ``<tool_call>`` of a reply and drops the words around it, so a
    model that says what it did and then terminates would leave no answer otherwise.
    """

    def __init__(self) -> None:
        self.calls, self.last_text = 0, ""

    async def on_api_end(self, kwargs: dict, result: dict) -> None:
        self.calls += 1
        message = ((result.get("choices") or [{}])[0]).get("message") or {}
        self.last_text = re.sub(r"<tool_call>[\s\S]*?</tool_call>", "", message.get("content") or "").strip()


async def run(settings: dict) -> dict:
    # Imported here, after the runner set the telemetry variables it reads at import.
    from cua_agent import ComputerAgent

    replies = _ModelReplies()
    agent = ComputerAgent(
        model=f"openai/{settings['model']}",  # litellm's OpenAI-compatible provider, at api_base
        tools=[computer()],
        callbacks=[replies],
        api_base=settings["base_url"],
        api_key=settings["api_key"],
        telemetry_enabled=False,
        max_retries=settings["max_retries"],
        screenshot_delay=settings["screenshot_delay_s"],
        max_tokens=settings["max_tokens"],
    )
    loop = type(agent.agent_loop).__name__
    if loop not in ("GenericVlmConfig", "Qwen3VlConfig"):
        raise RuntimeError(f"cua-agent picked its {loop} loop for {settings['model']!r}, not the Qwen-VL one")
    result = {"final_answer": None, "ended_by": "no_tool_call", "model_calls": 0, "actions": []}
    last_text = None
    async for chunk in agent.run([{"role": "user", "content": settings["prompt"]}]):
        result["model_calls"] = replies.calls
        for item in chunk.get("output") or []:
            if item.get("type") == "message" and item.get("role") == "assistant" and _text_of(item) != _MADE_UP:
                last_text = _text_of(item) or last_text
            elif item.get("type") == "computer_call":
                action = dict(item.get("action") or {})
                result["actions"].append(action)
                if action.get("type") in _FINAL_ACTIONS:
                    # Stop before cua-agent hands it to the computer as an unknown action.
                    result["ended_by"] = action["type"]
                    result["status"] = action.get("status")
                    result["final_answer"] = action.get("text") or replies.last_text or None
                    return result
    result["final_answer"] = last_text
    return result


def main() -> int:
    settings = json.loads(Path(sys.argv[1]).read_text())
    result = asyncio.run(run(settings))
    Path(settings["result_file"]).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
