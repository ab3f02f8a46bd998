"""Model-call sequences shaped like real harnesses, driven through a recording proxy.

Each driver plays one agent session the way its harness does it (docs/harnesses.md): the API,
streaming or not, the session id's place, the history resent append-only with the
harness's own echo of each answer (Claude Code's text and ``tool_use`` blocks, Codex's
``message`` and ``function_call`` items, mini-swe-agent's chat message), tool results in
the harness's format, and what the harness does when an answer has no tool call. Tool
outputs are canned text: what is measured is the conversation's shape, not the tools.
A session ends when the policy answers without a tool call (mini-swe-agent: when it
submits; an answer without exactly one tool call it drops from its history, adding only a
format error), or after ``max_turns`` calls.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

MAX_TURNS = 8
TASK = "Create notes.txt in the workspace containing hello, then check it."
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def tool_output(command: str) -> str:
    """A canned, deterministic result for a shell command or file write."""
    if "ls" in command:
        return "total 4\n-rw-r--r-- 1 agent agent 0 README.md"
    if "cat" in command:
        return "hello"
    return ""


def _command(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return json.dumps(arguments) if isinstance(arguments, dict) else str(arguments)


def _schema(**params: str) -> dict[str, Any]:
    return {"type": "object", "properties": {p: {"type": t} for p, t in params.items()}, "required": list(params)[:1]}


# -- Claude Code: Anthropic Messages, always streamed, session in a header ---------------

_CC_SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude. Use the tools to act in the workspace."
_CC_TOOLS = [
    {"name": "Bash", "description": "Run a bash command.", "input_schema": _schema(command="string", timeout="number")},
    {"name": "Read", "description": "Read a file.", "input_schema": _schema(file_path="string")},
    {"name": "Write", "description": "Write a file.", "input_schema": _schema(file_path="string", content="string")},
]
_CC_EXTRA = {
    "thinking": {"type": "adaptive"}, "context_management": {"edits": []}, "output_config": {"effort": "medium"},
}  # fmt: skip


async def claude_code(proxy: str, session: str, max_turns: int = MAX_TURNS) -> None:
    """Headless (``claude -p``): no title side call, which only interactive sessions make."""
    import anthropic

    headers = {"X-Claude-Code-Session-Id": session, "anthropic-beta": "claude-code-20250219"}
    client = anthropic.AsyncAnthropic(base_url=proxy, api_key="unused", max_retries=0, default_headers=headers)
    async with client:  # closed inside the running loop
        system = [{"type": "text", "text": _CC_SYSTEM, "cache_control": {"type": "ephemeral"}}]
        metadata = {"user_id": json.dumps({"session_id": session})}
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>cwd: /work</system-reminder>"},
                                         {"type": "text", "text": TASK}]},
        ]  # fmt: skip
        for _ in range(max_turns):
            _move_cache_marker(messages)
            async with client.messages.stream(
                model="claude-policy", max_tokens=512, system=system, tools=_CC_TOOLS, messages=messages,
                metadata=metadata, extra_body=_CC_EXTRA,
            ) as stream:  # fmt: skip
                message = await stream.get_final_message()
            blocks = [block.model_dump(exclude_none=True) for block in message.content]
            messages.append({"role": "assistant", "content": blocks})
            uses = [block for block in blocks if block["type"] == "tool_use"]
            if not uses:
                return
            results = [
                {"type": "tool_result", "tool_use_id": use["id"], "content": tool_output(_command(use["input"]))}
                for use in uses
            ]
            messages.append({"role": "user", "content": results})


def _move_cache_marker(messages: list[dict[str, Any]]) -> None:
    """Claude Code keeps one cache breakpoint on the newest message: markers move, nothing else."""
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else ():
            block.pop("cache_control", None)
    last = messages[-1]["content"]
    if isinstance(last, list) and last:
        last[-1]["cache_control"] = {"type": "ephemeral"}


# -- Codex CLI: OpenAI Responses, always streamed, developer message first ---------------

_CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "description": "Run a command.", "strict": False,
     "parameters": _schema(cmd="string", workdir="string")},
    {"type": "namespace", "name": "mcp", "tools": [
        {"type": "function", "name": "list_resources", "description": "List resources.", "parameters": _schema()}]},
    {"type": "web_search"},
]  # fmt: skip


async def codex(proxy: str, session: str, max_turns: int = MAX_TURNS) -> None:
    import openai

    headers = {"session-id": session, "thread-id": session, "x-client-request-id": session}
    client = openai.AsyncOpenAI(base_url=f"{proxy}/v1", api_key="unused", max_retries=0, default_headers=headers)
    async with client:  # closed inside the running loop
        items: list[dict[str, Any]] = [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]},
        ]
        for _ in range(max_turns):
            stream = await client.responses.create(
                model="gpt-5-codex", input=items, tools=_CODEX_TOOLS, tool_choice="auto", parallel_tool_calls=False,
                reasoning={"effort": "medium", "summary": "auto"}, store=False, stream=True,
                include=["reasoning.encrypted_content"], prompt_cache_key=session,
            )  # fmt: skip
            output: list[Any] = []
            async for event in stream:
                if event.type in ("response.completed", "response.incomplete"):
                    output = event.response.output
            calls = []
            for item in output:  # echoed as Codex keeps them: without server ids (store: false)
                if item.type == "message":
                    text = [{"type": "output_text", "text": part.text} for part in item.content]
                    items.append({"type": "message", "role": "assistant", "content": text})
                elif item.type == "function_call":
                    call = {"type": "function_call", "call_id": item.call_id, "name": item.name}
                    call["arguments"] = item.arguments
                    items.append(call)
                    calls.append(call)
            if not calls:
                return
            for call in calls:
                output = tool_output(call["arguments"])
                items.append({"type": "function_call_output", "call_id": call["call_id"], "output": output})


# -- mini-swe-agent: chat completions through litellm, not streamed, no session id -------

_MINI_TOOL = {"type": "function", "function": {"name": "bash", "description": "Run a bash command.",
                                               "parameters": _schema(command="string")}}  # fmt: skip
_MINI_FORMAT_ERROR = "Please always provide EXACTLY ONE action: a bash tool call."


async def mini_swe_agent(proxy: str, session: str, max_turns: int = MAX_TURNS) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=f"{proxy}/s/{session}/v1", api_key="unused", max_retries=0)
    async with client:  # closed inside the running loop
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            {"role": "user", "content": f"<pr_description>{TASK}</pr_description>"},
        ]
        for _ in range(max_turns):
            # litellm sends exactly these three fields: no max_tokens, no stream.
            reply = await client.chat.completions.create(model="openai/policy", messages=messages, tools=[_MINI_TOOL])
            message = reply.choices[0].message
            turn: dict[str, Any] = {"role": "assistant", "content": message.content}
            calls = message.tool_calls or []
            if calls:
                turn["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": c.function.model_dump(include={"name", "arguments"})}
                    for c in calls
                ]
            if len(calls) != 1:
                # Observed in mini-swe-agent 2.4.6: a malformed answer is not kept, only the error.
                messages.append({"role": "user", "content": _MINI_FORMAT_ERROR})
                continue
            messages.append(turn)
            command = _command(calls[0].function.arguments)
            if SUBMIT in command:
                return
            output = f"<returncode>0</returncode>\n<output>\n{tool_output(command)}\n</output>"
            messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": output})


# -- the reference harness: the real one, as a process (chat completions, not streamed) ---


async def reference(proxy: str, session: str, max_turns: int = MAX_TURNS) -> None:
    import asyncio
    import sys
    import tempfile
    from pathlib import Path

    from components.rollout import reference_harness

    with tempfile.TemporaryDirectory(prefix="continuity-") as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        argv = [
            "--base-url", f"{proxy}/s/{session}/v1", "--model", "policy", "--prompt", TASK,
            "--workspace", str(workspace), "--max-turns", str(max_turns), "--answer-file", f"{scratch}/answer.txt",
        ]  # fmt: skip
        process = await asyncio.create_subprocess_exec(
            sys.executable, reference_harness.__file__, *argv,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"the reference harness exited {process.returncode}: {stderr.decode()[-500:]}")


Driver = Callable[[str, str, int], Awaitable[None]]
SHAPES: dict[str, Driver] = {
    "reference": reference,
    "claude-code": claude_code,
    "codex": codex,
    "mini-swe-agent": mini_swe_agent,
}

# One policy for every shape; each tool call resolves to the shell or file tool the request
# declares. Real policies write text before a tool call: the first turn's 24 tokens of it
# are sampled by the model (ids a real policy would choose), the third turn's are scripted.
# The submission ends mini-swe-agent's session; the others then get a short sampled answer
# without a tool call, which ends theirs.
SCRIPT: dict[str, Any] = {
    "turns": [
        {"sampled_text": 24, "tool_calls": [{"shell": "ls -la"}]},
        {"content": "", "tool_calls": [{"write_file": {"path": "notes.txt", "content": "hello\n"}}]},
        {"content": "Now I check the file.", "tool_calls": [{"shell": "cat notes.txt"}]},
        {"content": "", "tool_calls": [{"shell": f"echo {SUBMIT}"}]},
        {"sampled_text": 8},
    ]
}

# The same session by a reasoning policy: each answer thinks first, the way Qwen3 writes it.
# The engine and the proxy read it with the `qwen3` reasoning parser, so the thinking goes
# back to the harness in its surface's reasoning field, which the harnesses do not send
# back: the row continues only if the proxy splices the sampled thinking back in.
REASONING_SCRIPT: dict[str, Any] = {
    "turns": [
        {"content": "<think>\nFirst see what the workspace holds.\n</think>\n\nLet me look.", "tool_calls": [{"shell": "ls -la"}]},
        {"content": "<think>\nNo notes yet: write them.\n</think>\n\n",
         "tool_calls": [{"write_file": {"path": "notes.txt", "content": "hello\n"}}]},
        {"content": "<think>\nCheck what was written.\n</think>\n\nNow I check the file.", "tool_calls": [{"shell": "cat notes.txt"}]},
        {"content": "<think>\nIt holds hello.\n</think>\n\n", "tool_calls": [{"shell": f"echo {SUBMIT}"}]},
        {"content": "<think>\nAll done.\n</think>\n\nnotes.txt holds hello."},
    ]
}  # fmt: skip
REASONING_ARGS = ("--reasoning-parser", "qwen3")

# Claude Code handing the check to a subagent (its Agent tool, in the foreground): the
# subagent's calls interleave with the parent's and become a branch of their own. The
# subagent's first turn is the script's first again: Explore subagents have no Agent tool,
# so Claude Code refuses it as an unknown tool and the subagent answers on its next turn.
SUBAGENT_SCRIPT: dict[str, Any] = {
    "turns": [
        {"tool_calls": [{"name": "Agent", "arguments": {
            "description": "Look around", "prompt": "List the files in the workspace.",
            "subagent_type": "Explore", "run_in_background": False}}]},
        {"content": "", "tool_calls": [{"write_file": {"path": "notes.txt", "content": "hello\n"}}]},
        {"sampled_text": 8},
    ]
}  # fmt: skip
