"""``<think>...</think>`` reasoning, under vLLM's reasoning-parser names ``qwen3`` and ``deepseek_r1``.

Both read a completion as reasoning until ``</think>`` (the generation prompt may have
opened the block already, so a completion may hold only the end tag; a ``<think>`` the
model writes itself is dropped), and everything when no end tag comes (the answer was cut
inside its reasoning). As in vLLM 0.32, ``qwen3`` also ends the reasoning at a
``<tool_call>`` (Qwen3 models may call a tool without closing the block first) and drops
any later ``</think>``; ``deepseek_r1`` keeps the rest verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.core.parsers._base import partial_suffix

START, END = "<think>", "</think>"


@dataclass
class ReasoningView:
    """``text[reasoning_start:reasoning_end]`` is sure reasoning; content starts at ``content_start`` (None: not yet)."""

    reasoning_start: int
    reasoning_end: int
    content_start: int | None


class ReasoningFormat:
    name = ""
    ends: tuple[str, ...] = (END,)  # tags that end the reasoning
    drops_later_end = False  # a second </think> in the content is dropped

    def _body_start(self, text: str) -> int:
        at = text.find(START)
        return at + len(START) if at >= 0 else 0

    def _end(self, text: str, start: int) -> tuple[int, int] | None:
        """(where the first ending tag is, where the content starts) or None."""
        found = [(at, tag) for tag in self.ends if (at := text.find(tag, start)) >= 0]
        if not found:
            return None
        at, tag = min(found)
        return at, at + len(tag) if tag == END else at

    def extract(self, text: str) -> tuple[str | None, str | None]:
        """``(reasoning, content)`` of a finished text."""
        start = self._body_start(text)
        end = self._end(text, start)
        if end is None:
            return text[start:] or None, None
        content = text[end[1] :]
        if self.drops_later_end:
            content = content.replace(END, "")
        return text[start : end[0]] or None, content or None

    def view(self, text: str, final: bool) -> ReasoningView:
        at = text.find(START)
        start = at + len(START) if at >= 0 else 0
        if at < 0 and not final and partial_suffix(text, START) == len(text):
            return ReasoningView(0, 0, None)  # the text so far may still be the start tag
        end = self._end(text, start)
        if end is None:
            held = 0 if final else max(partial_suffix(text, tag) for tag in self.ends)
            return ReasoningView(start, max(start, len(text) - held), None)
        return ReasoningView(start, end[0], end[1])


class Qwen3(ReasoningFormat):
    name = "qwen3"
    ends = (END, "<tool_call>")
    drops_later_end = True


class DeepSeekR1(ReasoningFormat):
    name = "deepseek_r1"
