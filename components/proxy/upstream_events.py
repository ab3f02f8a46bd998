"""The engine's answers as JSON objects: a whole body, or a stream's chunks read by read.

A streamed call decodes one chunk per generated token, so this is the proxy's hottest
loop. The engine's usual read is a run of one-line ``data: {...}`` events; such a read
is decoded as one JSON array (one replace and one ``orjson.loads``, no per-event Python
work). Anything else (comments, ``event:`` or multi-line events, CRLF, an event split
across reads, a payload that is not one JSON object) takes the general SSE parser, which
names the payload that is wrong.
"""

from __future__ import annotations

from typing import Any

import orjson

from components.proxy.errors import ProxyError
from components.proxy.sse import DONE, SSEParser

_DATA = b"data: "
_SEPARATOR = b"\n\ndata: "
_DONE_EVENT = b"data: [DONE]\n\n"
_OBJECTS = frozenset({dict})


def decode_object(payload: bytes) -> dict[str, Any]:
    """One JSON object from the engine, or a 502 that quotes what came instead."""
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        data = None
    if type(data) is not dict:
        raise ProxyError(502, f"upstream sent something that is not a JSON object: {payload[:200]!r}", code="upstream_invalid")
    return data


class ChunkReader:
    """Feed the engine's SSE bytes as they arrive; get each read's decoded chunks.

    ``done`` turns true at the ``[DONE]`` event; whatever follows it is ignored. A payload
    that is not a JSON object sets ``failure`` and ends the read: the chunks before it
    are returned, so the caller can still record them.
    """

    def __init__(self) -> None:
        self.done = False
        self.failure: ProxyError | None = None
        self._parser = SSEParser()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if not self.done and not self._parser.pending:
            chunks = _whole_events(data)
            if chunks is not None:
                if data.endswith(_DONE_EVENT):
                    self.done = True
                return chunks
        return self._decode(self._parser.feed(data))

    def close(self) -> list[dict[str, Any]]:
        """The event the stream ended on without its blank line, if any."""
        return self._decode(self._parser.close())

    def _decode(self, payloads: list[bytes]) -> list[dict[str, Any]]:
        chunks = []
        for payload in payloads:
            if self.done:
                break
            if payload == DONE:
                self.done = True
                continue
            try:
                chunks.append(decode_object(payload))
            except ProxyError as err:
                self.failure = err
                break
        return chunks


def _whole_events(data: bytes) -> list[dict[str, Any]] | None:
    """The read's chunks when it is only complete one-line data events, else None."""
    if data.endswith(_DONE_EVENT):
        data = data[: -len(_DONE_EVENT)]
        if not data:
            return []
    if not data.startswith(_DATA) or not data.endswith(b"\n\n"):
        return None
    joined = data[6:-2].replace(_SEPARATOR, b",")
    if 10 in joined or 13 in joined:  # a newline left: a comment, a field other than data, CRLF
        return None
    try:
        chunks = orjson.loads(b"[" + joined + b"]")
    except orjson.JSONDecodeError:
        return None
    # As many values as events, all objects: then each payload was exactly one object
    # (a payload cannot hold two values and another none, the array would not parse).
    events = (len(data) - 8 - len(joined)) // (len(_SEPARATOR) - 1) + 1
    if len(chunks) != events or not _OBJECTS.issuperset(map(type, chunks)):
        return None
    return chunks
