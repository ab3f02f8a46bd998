"""Harness-shaped traffic for the dev engine: long shared prompts, concurrent sessions, growing histories.

What Claude Code, Codex and OpenClaw send: a system prompt and tool schemas of 16-22k
tokens shared by every session of a rollout, then a task of the session's own, and on
every turn the whole history again with the last answer and a tool result appended. All
text comes from a seeded generator, so every run sends the same requests.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

_WORDS = (
    "the agent reads files runs commands edits code and reports what it changed before it finishes a task "
    "always check the output of a command prefer small focused edits keep the user informed never guess a path "
    "use the tool that fits the job search before you read read before you edit test after you change anything "
    "when a command fails read its error and fix the cause explain briefly what you did and why it matters"
).split()
_TOOLS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep", "WebFetch", "TodoWrite", "Task", "NotebookEdit",
          "LS", "MultiEdit", "WebSearch", "ExitPlanMode", "KillShell", "BashOutput")  # fmt: skip


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, sentences: int = 6) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


def shared_prefix(paragraphs: int, tools: int, seed: int = 0) -> tuple[str, list[dict[str, Any]]]:
    """A system prompt of ``paragraphs`` paragraphs and the ``tools`` schemas every session sends."""
    rng = random.Random(seed)
    sections = [f"# Section {i}\n{_paragraph(rng)}" for i in range(paragraphs)]
    rng = random.Random(seed + 1)  # the same tools whatever the system prompt's length
    system = "You are a coding agent working in a repository on behalf of the user.\n\n" + "\n\n".join(sections)
    schemas = []
    for name in _TOOLS[:tools]:
        params = {}
        for k in range(4):
            kind = rng.choice(["string", "integer", "boolean"])
            params[f"{name.lower()}_{k}"] = {"type": kind, "description": _paragraph(rng, 2)}
        schema = {"type": "object", "properties": params, "required": list(params)[:2]}
        function = {"name": name, "description": _paragraph(rng, 8), "parameters": schema}
        schemas.append({"type": "function", "function": function})
    return system, schemas


def filler(seed: int, sentences: int) -> str:
    """A session's own text (a task, a tool result), different for every seed."""
    rng = random.Random(seed)
    return " ".join(_sentence(rng, rng.randint(8, 18)) for _ in range(sentences))


@dataclass
class Call:
    session: int
    turn: int
    prompt_tokens: int
    latency_s: float


@dataclass
class Session:
    """One conversation: its messages so far, resent whole on every call."""

    index: int
    messages: list[dict[str, Any]]
    calls: list[Call] = field(default_factory=list)


class Engine:
    """The dev engine's HTTP API as the benchmark uses it."""

    def __init__(self, http: aiohttp.ClientSession, url: str, model: str, tools: list[dict[str, Any]], max_tokens: int):
        self.http, self.url, self.model, self.tools, self.max_tokens = http, url, model, tools, max_tokens

    async def prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        body = {"model": self.model, "messages": messages, "tools": self.tools, "add_generation_prompt": True}
        async with self.http.post(self.url + "/tokenize", json=body) as resp:
            resp.raise_for_status()
            return (await resp.json())["count"]

    async def chat(self, messages: list[dict[str, Any]], seed: int) -> tuple[str, int, float]:
        """The answer's text, the prompt's token count and the call's latency."""
        body = {"model": self.model, "messages": messages, "tools": self.tools, "max_tokens": self.max_tokens,
                "seed": seed, "return_token_ids": True}  # fmt: skip
        start = time.perf_counter()
        async with self.http.post(self.url + "/v1/chat/completions", json=body) as resp:
            answer = await resp.json()
            if resp.status != 200:
                raise RuntimeError(f"the engine answered {resp.status}: {answer}")
        latency = time.perf_counter() - start
        return answer["choices"][0]["message"]["content"] or "", len(answer["prompt_token_ids"]), latency

    async def health(self) -> dict[str, Any]:
        async with self.http.get(self.url + "/health") as resp:
            return await resp.json()


def new_session(index: int, system: str, task_sentences: int) -> Session:
    task = f"Task {index}: " + filler(1000 + index, task_sentences)
    return Session(index, [{"role": "system", "content": system}, {"role": "user", "content": task}])


async def take_turn(engine: Engine, session: Session, turn: int, result_sentences: int) -> Call:
    """One call with the whole history, then the answer and a tool result appended."""
    text, prompt_tokens, latency = await engine.chat(session.messages, seed=session.index * 100 + turn)
    result = filler(10_000 + session.index * 100 + turn, result_sentences)
    session.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "Tool result:\n" + result}]
    call = Call(session.index, turn, prompt_tokens, latency)
    session.calls.append(call)
    return call


async def iteration(engine: Engine, sessions: list[Session], turns: int, result_sentences: int) -> float:
    """All sessions at once, each taking ``turns`` turns in order; the wall time."""

    async def play(session: Session) -> None:
        for turn in range(turns):
            await take_turn(engine, session, turn, result_sentences)

    start = time.perf_counter()
    await asyncio.gather(*(play(s) for s in sessions))
    return time.perf_counter() - start
