"""The surface seam: what an API the harness speaks must provide to be served and recorded.

The engine always speaks chat completions (``upstream_chat``). A surface translates its
API's request into an engine chat request, the engine's completion (streamed or not) back
into its API's response or events, and proxy errors into its API's error shape. The
call pipeline (``calls.py``) does everything else: sessions, upstream I/O, recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from components.proxy.errors import ProxyError


@dataclass
class TranslationNotes:
    """What a surface changed to make its request an engine chat request (kept in the record)."""

    dropped: list[str] = field(default_factory=list)  # removed: the engine cannot take it
    ignored: list[str] = field(default_factory=list)  # accepted, not acted on
    mapped: list[str] = field(default_factory=list)  # rewritten for the chat template

    def note_untranslated(self, request: dict[str, Any], translated: frozenset[str] | set[str]) -> None:
        """Every top-level field the translation did not use counts as ignored, in a stable order."""
        self.ignored[:0] = sorted(key for key in request if key not in translated)
        self.ignored = sorted(set(self.ignored), key=self.ignored.index)


def pass_through(request: dict[str, Any], chat: dict[str, Any], pairs: tuple[tuple[str, str], ...]) -> None:
    """Copy the fields that mean the same in the chat API (``source -> target``), and ``stream``."""
    for source, target in (*pairs, ("stream", "stream")):
        if request.get(source) is not None:
            chat[target] = request[source]


class StreamTranslator(Protocol):
    """Per-call state that turns engine chunks into the surface's SSE bytes."""

    def events(self, chunks: list[dict[str, Any]]) -> bytes:
        """Client bytes for the chunks of one engine read (may be empty); chunks may be modified."""

    def error(self, err: ProxyError) -> bytes:
        """An in-stream error event, for failures after the response has started."""

    def end(self) -> bytes:
        """The stream's closing bytes; sent only after the call is on disk."""


class ChunkByChunk:
    """For translators whose events come from one chunk at a time: ``events`` joins them."""

    def event(self, chunk: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def events(self, chunks: list[dict[str, Any]]) -> bytes:
        return b"".join([self.event(chunk) for chunk in chunks])


class Surface(Protocol):
    """One API served by the proxy (OpenAI chat completions, Anthropic Messages, ...)."""

    api: str  # the RecordedCall.api value
    path: str  # the route under /v1, e.g. "/v1/chat/completions"

    def parse(self, body: Any) -> dict[str, Any]:
        """Validate a decoded request body; raise ProxyError(400) naming what is wrong."""

    def is_stream(self, request: dict[str, Any]) -> bool: ...

    def to_upstream(self, request: dict[str, Any]) -> tuple[dict[str, Any], TranslationNotes | None]:
        """The engine chat request (before the proxy adds token ids, logprobs, sampling), and
        notes on the translation; None when the request is chat completions as sent."""

    def to_client(self, completion: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        """The surface's response for an engine chat completion; may modify ``completion``."""

    def stream(self, request: dict[str, Any]) -> StreamTranslator: ...

    def error_body(self, err: ProxyError) -> dict[str, Any]: ...
