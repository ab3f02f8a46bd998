"""Why a call that extends no row starts a row of its own: the branch kinds of the merge.

A rollout's calls form a graph, not a line: a subagent's calls interleave with its
parent's, and a harness that rewrites or compacts its history re-sends an edited
conversation. ``rows.merge_calls`` lets a call continue whichever row its prompt
extends; a call that extends none becomes a branch, tagged with its parent call and
one of these kinds:

- ``subagent``: the call's first user message is the task an earlier call handed to a
  subagent tool (``SPAWN_TOOLS``); that earlier call is the parent.
- ``rewrite``: the prompt shares a prefix with an earlier call but leaves it inside
  that call's prompt: the harness edited its earlier history.
- ``break``: anything else (nothing shared, the prompt leaves the earlier call inside
  its sampled completion, i.e. the answer was re-rendered into other tokens).

The rule lives here, not in the proxy's call tags: it needs the whole rollout (the
parent's recorded answer), which the trainer has and the proxy would have to remember,
and a rule fixed here applies to trajectories recorded before the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from components.core.tool_calls import answer_tool_calls
from components.core.trajectory import RecordedCall

SUBAGENT = "subagent"
REWRITE = "rewrite"
BREAK = "break"
BRANCH_KINDS = (SUBAGENT, REWRITE)  # counted by kind; breaks are counted apart

# Tools that start a subagent, and the argument holding the task the subagent is given
# as its first user message (docs/harnesses.md, "Subagents").
SPAWN_TOOLS = {
    "Agent": "prompt",  # Claude Code 2.1 (named Task before)
    "Task": "prompt",
    "spawn_agent": "message",  # Codex's multi_agent_v1 namespace
}


@dataclass(frozen=True)
class Branch:
    kind: str  # SUBAGENT, REWRITE or BREAK
    parent_call: int | None  # call_index of the call it branches from; None when nothing is shared


def tool_calls(response: Mapping[str, Any] | None) -> list[tuple[str, Mapping[str, Any]]]:
    """``(name, arguments)`` of each tool call in a recorded response, for every recorded API."""
    return [(call.name, call.arguments) for call in answer_tool_calls(response)]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts = []
    for block in content or []:
        if isinstance(block, Mapping) and isinstance(block.get("text"), str):
            texts.append(block["text"])  # text (anthropic, chat) and input_text (responses)
    return texts


def first_user_texts(request: Mapping[str, Any]) -> list[str]:
    """The text blocks of a request's first user message (messages or responses input)."""
    items = request.get("messages") or request.get("input") or []
    if isinstance(items, str):
        return [items]
    for item in items:
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _texts(item.get("content"))
    return []


def spawned_tasks(call: RecordedCall) -> list[str]:
    """The tasks this call handed to subagents, stripped."""
    tasks = []
    for name, arguments in tool_calls(call.response):
        task = arguments.get(SPAWN_TOOLS.get(name.rsplit(".", 1)[-1], ""))
        if isinstance(task, str) and task.strip():
            tasks.append(task.strip())
    return tasks


def launcher(call: RecordedCall, earlier: Sequence[RecordedCall]) -> RecordedCall | None:
    """The latest earlier call that handed ``call``'s first user message to a subagent tool."""
    texts = {text.strip() for text in first_user_texts(call.request)}
    for candidate in reversed(earlier):
        if texts.intersection(spawned_tasks(candidate)):
            return candidate
    return None


def _shared(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the common prefix of two token arrays."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class Lineage:
    """The calls of one rollout merged so far, to classify the next call that extends no row."""

    def __init__(self) -> None:
        self._calls: list[RecordedCall] = []
        self._tokens: list[np.ndarray] = []  # each call's prompt + completion, for prefix comparisons

    def add(self, call: RecordedCall) -> None:
        self._calls.append(call)
        self._tokens.append(np.asarray(call.prompt_token_ids + call.completion_token_ids, dtype=np.int64))

    def classify(self, call: RecordedCall) -> Branch:
        """The kind and parent of ``call``'s branch: it extends no row of the calls added so far."""
        spawner = launcher(call, self._calls)
        if spawner is not None:
            return Branch(SUBAGENT, spawner.call_index)
        prompt = np.asarray(call.prompt_token_ids, dtype=np.int64)
        best, shared, rank = None, 0, (0, False)
        for candidate, tokens in zip(self._calls, self._tokens):
            # The longest shared prefix; on ties the call the prompt goes on from whole, then the latest.
            n = _shared(prompt, tokens)
            if n and (n, n == len(tokens)) >= rank:
                best, shared, rank = candidate, n, (n, n == len(tokens))
        if best is None:
            return Branch(BREAK, None)
        # Leaving the parent inside its prompt, or after its whole answer (a later turn was
        # dropped from the history), is an edit of the history; inside its answer, a re-render.
        answer = len(best.prompt_token_ids) <= shared < len(best.prompt_token_ids) + len(best.completion_token_ids)
        return Branch(BREAK if answer else REWRITE, best.call_index)
