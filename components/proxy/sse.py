"""Server-sent events: split an upstream byte stream into events, and frame events for the client."""

from __future__ import annotations

DONE = b"[DONE]"


class SSEParser:
    """Incremental parser: feed raw bytes as they arrive, get back each complete event's data."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer + data if self._buffer else data
        if _CR in buffer:
            # A lone trailing "\r" waits in the buffer for its "\n" from the next read.
            buffer = buffer.replace(b"\r\n", b"\n")
        *blocks, self._buffer = buffer.split(b"\n\n")
        # The common one-line "data: " event is handled in line: a call per event would
        # cost more than the test.
        payloads = [block[6:] if _LF not in block and block[:6] == b"data: " else _event_data(block) for block in blocks]
        return payloads if None not in payloads else [payload for payload in payloads if payload is not None]

    @property
    def pending(self) -> bool:
        """Part of an event is held, waiting for the rest of it in the next read."""
        return bool(self._buffer)

    def close(self) -> list[bytes]:
        """Whatever event the stream ended on without its blank line."""
        rest, self._buffer = self._buffer.strip(), b""
        payload = _event_data(rest) if rest else None
        return [payload] if payload is not None else []


# Byte values, not one-byte strings: `int in bytes` is a plain scan, while `bytes in bytes`
# first tries the needle as an int and raises and clears a TypeError on every test.
_CR, _LF = 13, 10


def _event_data(block: bytes) -> bytes | None:
    if _LF not in block and block[:6] == b"data: ":  # the common one-line event
        return block[6:]
    lines = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None  # comments and event/id-only blocks carry no data


def sse_event(data: bytes, event: str | None = None) -> bytes:
    """One framed event; ``event`` names it for APIs with typed events (Anthropic, Responses)."""
    if not event:
        return b"data: " + data + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
