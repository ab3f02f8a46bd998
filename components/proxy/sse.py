"""Server-sent events: split an upstream byte stream into events, and frame events for the client."""

from __future__ import annotations

DONE = b"[DONE]"


class SSEParser:
    """Incremental parser: feed raw bytes as they arrive, get back each complete event's data."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer + data if self._buffer else data
        if b"\r" in buffer:
            # A lone trailing "\r" waits in the buffer for its "\n" from the next read.
            buffer = buffer.replace(b"\r\n", b"\n")
        events: list[bytes] = []
        start = 0
        while (end := buffer.find(b"\n\n", start)) >= 0:
            payload = _event_data(buffer[start:end])
            if payload is not None:
                events.append(payload)
            start = end + 2
        self._buffer = buffer[start:]
        return events

    def close(self) -> list[bytes]:
        """Whatever event the stream ended on without its blank line."""
        rest, self._buffer = self._buffer.strip(), b""
        payload = _event_data(rest) if rest else None
        return [payload] if payload is not None else []


def _event_data(block: bytes) -> bytes | None:
    if block.startswith(b"data: ") and b"\n" not in block:  # the common one-line event
        return block[6:]
    lines = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None  # comments and event/id-only blocks carry no data


def sse_event(data: bytes, event: str | None = None) -> bytes:
    """One framed event; ``event`` names it for APIs with typed events (Anthropic, Responses)."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + data + b"\n\n"
