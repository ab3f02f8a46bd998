"""The reference harness: a small multi-turn agent with one ``shell`` tool.

It is a real harness, run as its own process, that speaks OpenAI chat completions to
whatever base URL it is given and imports nothing from OpenForge, exactly like the
third-party harnesses it stands in for. It speaks HTTP with the standard library alone: importing
the ``openai`` client costs more CPU than all the rest of its run, and every rollout of the
quickstart and of the tests starts one. The loop: send the conversation with the tool; run every tool call in the
workspace and append its output; stop when the model answers without a tool call or
after ``--max-turns`` model calls; write the last answer to ``--answer-file``.

Exit status: 0 on a normal end (an answer, or the turn limit), 2 when the model API
fails (message on stderr), 1 on any other error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

EXIT_API_ERROR = 2
SYSTEM_PROMPT = (
    "You are an agent working in a Linux shell. Your current directory is the task's workspace. "
    "Use the shell tool to inspect files and run commands. When the task is done, reply with your "
    "final answer as plain text, without calling a tool."
)
SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a bash command in the workspace; returns its exit code and output (stdout and stderr).",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command line to run."}},
            "required": ["command"],
        },
    },
}


# The statuses worth another try, as OpenAI's own clients retry them.
_RETRIED_STATUSES = frozenset({408, 409, 429})
_MAX_BACKOFF_S = 8.0


class ModelAPIError(RuntimeError):
    """The model API failed: an HTTP error after retries, an unreachable server, or a 200
    answer that carries no choice or is not JSON."""


class ChatClient:
    """POSTs chat completions to ``{base_url}/chat/completions`` with a bearer key, retrying
    connection errors, 408/409/429 and 5xx with exponential backoff (a ``Retry-After`` of
    at most a minute is honoured)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, max_retries: int) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"}
        self._timeout_s = timeout_s
        self._max_retries = max_retries

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            request = urllib.request.Request(self.url, data=data, headers=self._headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                    return _json_answer(response.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:500]
                if last or not (exc.code in _RETRIED_STATUSES or exc.code >= 500):
                    raise ModelAPIError(f"HTTP {exc.code}: {detail}") from exc
                delay = _retry_after(exc.headers.get("Retry-After"))
            except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out
                if last:
                    raise ModelAPIError(f"connection failed: {exc}") from exc
                delay = None
            time.sleep(delay if delay is not None else min(0.5 * 2**attempt, _MAX_BACKOFF_S))
        raise AssertionError("unreachable: the last attempt returns or raises")


def _json_answer(raw: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(raw)
    except ValueError as exc:
        raise ModelAPIError(f"the answer is not JSON: {raw[:200]!r}") from exc
    if not isinstance(answer, dict) or not answer.get("choices"):
        raise ModelAPIError("the model API answered without any choices")
    return answer


def _retry_after(header: str | None) -> float | None:
    try:
        seconds = float(header) if header is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds <= 60 else None


def run_shell(command: str, workspace: Path, timeout_s: float, max_output_bytes: int) -> str:
    """Run ``command`` with bash in ``workspace``; the tool result the model will read."""
    shell = shutil.which("bash") or "/bin/sh"
    # Its own process group, so a timeout (or a job it left in the background) can be
    # killed without touching the harness; the group stays in the harness's session,
    # which the rollout runner kills as a whole.
    proc = subprocess.Popen(
        [shell, "-c", command],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        process_group=0,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        status = f"exit code {proc.returncode}"
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        output, _ = proc.communicate()
        status = f"timed out after {timeout_s:g}s (killed)"
    _kill_group(proc.pid)  # background jobs must not outlive their command
    return f"[{status}]\n{_truncate(output, max_output_bytes)}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _truncate(output: bytes, limit: int) -> str:
    if len(output) <= limit:
        return output.decode(errors="replace")
    # Keep both ends: the command's start says what ran, its end usually holds the error.
    half = limit // 2
    skipped = len(output) - 2 * half
    return (
        output[:half].decode(errors="replace")
        + f"\n[... {skipped} bytes truncated ...]\n"
        + output[-half:].decode(errors="replace")
    )


def _tool_result(call: dict[str, Any], args: argparse.Namespace) -> str:
    function = call.get("function") or {}
    if function.get("name") != "shell":
        return f"error: unknown tool {function.get('name')!r}; the only tool is 'shell'"
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError as exc:
        return f"error: tool arguments are not valid JSON ({exc}); send {{\"command\": \"...\"}}"
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if not isinstance(command, str) or not command.strip():
        return 'error: the shell tool needs {"command": "<a bash command line>"}'
    return run_shell(command, args.workspace, args.command_timeout_s, args.max_output_bytes)


def _assistant_message(message: dict[str, Any]) -> dict[str, Any]:
    # Rebuilt field by field: echoing the whole object would send back engine-specific
    # extras (reasoning fields, token ids) that other servers reject.
    turn: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        turn["tool_calls"] = [
            {"id": c.get("id"), "type": "function", "function": {"name": f.get("name"), "arguments": f.get("arguments")}}
            for c in message["tool_calls"]
            for f in [c.get("function") or {}]
        ]
    return turn


def run_agent(client: ChatClient, args: argparse.Namespace) -> str:
    """The agent loop; returns the final answer (the last assistant text)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": args.prompt},
    ]
    answer = ""
    for turn in range(1, args.max_turns + 1):
        response = client.create(
            {"model": args.model, "messages": messages, "tools": [SHELL_TOOL], "max_tokens": args.max_tokens}
        )
        message = response["choices"][0].get("message") or {}
        answer = message.get("content") or ""
        messages.append(_assistant_message(message))
        if not message.get("tool_calls"):
            print(f"turn {turn}: answered ({len(answer)} characters)", flush=True)
            return answer
        for call in message["tool_calls"]:
            result = _tool_result(call, args)
            name = (call.get("function") or {}).get("name")
            print(f"turn {turn}: {name} -> {result.splitlines()[0]}", flush=True)
            messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
    print(f"stopped after --max-turns {args.max_turns} model calls", flush=True)
    return answer


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible base URL, ending in /v1.")
    parser.add_argument("--model", required=True, help="Model name to send.")
    parser.add_argument("--prompt", required=True, help="The task given to the agent.")
    parser.add_argument("--workspace", required=True, type=Path, help="Directory the shell commands run in.")
    parser.add_argument("--max-turns", type=int, default=8, help="Most model calls before giving up.")
    parser.add_argument("--max-tokens", type=int, default=512, help="Completion tokens per model call.")
    parser.add_argument("--answer-file", required=True, type=Path, help="Where the final answer is written.")
    parser.add_argument("--command-timeout-s", type=float, default=30.0, help="Limit of one shell command.")
    parser.add_argument("--max-output-bytes", type=int, default=4096, help="Tool output kept per command.")
    parser.add_argument("--request-timeout-s", type=float, default=600.0, help="Limit of one model call.")
    parser.add_argument("--max-retries", type=int, default=2, help="Retries of a failed model call.")
    args = parser.parse_args(argv)
    if args.max_turns < 1 or args.max_tokens < 1:
        parser.error("--max-turns and --max-tokens must be at least 1")
    if not args.workspace.is_dir():
        parser.error(f"--workspace {args.workspace} is not a directory")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    client = ChatClient(
        args.base_url, os.environ.get("OPENAI_API_KEY") or "unused", args.request_timeout_s, args.max_retries
    )
    try:
        answer = run_agent(client, args)
    except ModelAPIError as exc:
        print(f"reference harness: model API error from {args.base_url}: {exc}", file=sys.stderr)
        return EXIT_API_ERROR
    args.answer_file.parent.mkdir(parents=True, exist_ok=True)
    args.answer_file.write_text(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
