"""Incremental detokenization with stop strings, as a streaming server needs it.

Text is released only once it can no longer change: a trailing partial UTF-8 character
(decoded as U+FFFD) and a tail that could still grow into a stop string are held back.
The released pieces concatenate to exactly the final text.
"""

from __future__ import annotations

from typing import Any

_REPLACEMENT = "\ufffd"


class TextAssembler:
    def __init__(
        self,
        tokenizer: Any,
        *,
        skip_special_tokens: bool,
        stop: tuple[str, ...] = (),
        include_stop_str_in_output: bool = False,
    ) -> None:
        self._tokenizer = tokenizer
        self._skip_special = skip_special_tokens
        self._stop = stop
        self._include_stop = include_stop_str_in_output
        self._holdback = max((len(s) for s in stop), default=1) - 1
        self._ids: list[int] = []
        self._text = ""
        self._stable = 0  # length of text that later tokens can no longer rewrite
        self._sent = 0

    def add(self, token_id: int) -> tuple[str, str | None]:
        """Add a generated token; return (text now safe to send, stop string hit or None)."""
        self._ids.append(token_id)
        self._text = self._tokenizer.decode(self._ids, skip_special_tokens=self._skip_special)
        searched_from = self._stable
        self._stable = len(self._text.rstrip(_REPLACEMENT))
        for stop in self._stop:
            at = self._text.find(stop, max(0, searched_from - len(stop) + 1))
            if at >= 0:
                end = at + len(stop) if self._include_stop else at
                return self._release(min(end, len(self._text)), final=True), stop
        return self._release(self._stable - self._holdback), None

    def flush(self) -> str:
        """Release everything held back (the generation has ended)."""
        return self._release(len(self._text))

    def _release(self, upto: int, final: bool = False) -> str:
        if final:
            self._text = self._text[:upto]
        if upto <= self._sent:
            return ""
        piece = self._text[self._sent : upto]
        self._sent = upto
        return piece
