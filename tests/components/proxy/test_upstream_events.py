"""The engine's stream decoded read by read: the one-array fast path agrees with the SSE parser."""

from __future__ import annotations

import orjson
import pytest

from components.proxy.errors import ProxyError
from components.proxy.sse import sse_event
from components.proxy.upstream_events import ChunkReader, decode_object

CHUNKS = [{"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]} for text in ("a", "b\n\ndata: x", "")]


def _events(*payloads: bytes) -> bytes:
    return b"".join(sse_event(payload) for payload in payloads)


def _read(reads: list[bytes]) -> tuple[list[dict], ChunkReader]:
    reader = ChunkReader()
    chunks = [chunk for data in reads for chunk in reader.feed(data)]
    return chunks + reader.close(), reader


def test_a_read_of_whole_data_events_decodes_every_chunk_and_done() -> None:
    chunks, reader = _read([_events(*map(orjson.dumps, CHUNKS), b"[DONE]")])
    assert chunks == CHUNKS and reader.done and reader.failure is None


@pytest.mark.parametrize("size", [1, 2, 7, 64])
def test_events_cut_anywhere_across_reads_give_the_same_chunks(size: int) -> None:
    stream = _events(*map(orjson.dumps, CHUNKS), b"[DONE]")
    chunks, reader = _read([stream[i : i + size] for i in range(0, len(stream), size)])
    assert chunks == CHUNKS and reader.done


@pytest.mark.parametrize(
    "stream",
    [
        b": keep-alive\n\n" + _events(orjson.dumps(CHUNKS[0])),  # a comment
        b"event: delta\n" + _events(orjson.dumps(CHUNKS[0])),  # a named event
        b'data: {"id": "c",\ndata: "choices": []}\n\n',  # one payload over two data lines
        _events(orjson.dumps(CHUNKS[0])).replace(b"\n", b"\r\n"),  # CRLF line ends
        b"data:" + orjson.dumps(CHUNKS[0]) + b"\n\n",  # no space after the colon
    ],
)
def test_other_sse_shapes_take_the_general_parser(stream: bytes) -> None:
    chunks, reader = _read([stream])
    assert len(chunks) == 1 and isinstance(chunks[0], dict) and reader.failure is None


def test_nothing_after_done_is_read() -> None:
    chunks, reader = _read([_events(orjson.dumps(CHUNKS[0]), b"[DONE]", orjson.dumps(CHUNKS[1]))])
    assert chunks == [CHUNKS[0]] and reader.done


@pytest.mark.parametrize("bad", [b"[1, 2]", b'{"a": 1},{"b": 2}', b"not json", b"", b"[DONE]x"])
def test_a_payload_that_is_not_one_object_fails_naming_it_and_keeps_the_chunks_before(bad: bytes) -> None:
    reader = ChunkReader()
    chunks = reader.feed(_events(orjson.dumps(CHUNKS[0]), bad, orjson.dumps(CHUNKS[1])))
    assert chunks == [CHUNKS[0]]
    assert reader.failure is not None and reader.failure.status == 502 and repr(bad[:20])[2:-1] in reader.failure.message


def test_decode_object_refuses_json_that_is_not_an_object() -> None:
    assert decode_object(b'{"a": 1}') == {"a": 1}
    with pytest.raises(ProxyError, match="not a JSON object"):
        decode_object(b"[]")
