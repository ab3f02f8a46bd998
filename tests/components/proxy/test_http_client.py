"""The proxy's HTTP/1.1 client against a raw TCP server on 127.0.0.1 that answers with scripted bytes.

A raw server, not an HTTP framework, so that every framing case (chunks split anywhere,
no length, interim answers, broken answers, connections closed at each moment) is sent
exactly as written here.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from components.proxy.errors import undelivered, upstream_exception
from components.proxy.http_client import (
    UpstreamClient,
    UpstreamConnectError,
    UpstreamConnectTimeout,
    UpstreamDisconnected,
)

BODY = b'data: {"a": 1}\n\ndata: [DONE]\n\n'


def _chunked(body: bytes, sizes: list[int]) -> bytes:
    out, pos = b"", 0
    for size in sizes + [len(body)]:
        piece = body[pos : pos + size]
        pos += len(piece)
        if piece:
            out += b"%x\r\n%s\r\n" % (len(piece), piece)
    return out + b"0\r\n\r\n"


class RawServer:
    """Answers each request with the next scripted reply: bytes sent in the given pieces, then maybe a close."""

    def __init__(self) -> None:
        self.replies: list[tuple[list[bytes], bool]] = []
        self.requests: list[bytes] = []
        self.connections = 0
        self._server: asyncio.Server | None = None

    def reply(self, *pieces: bytes, close: bool = False) -> None:
        self.replies.append((list(pieces), close))

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next((line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), b"0"))
                self.requests.append(head + await reader.readexactly(length))
                pieces, close = self.replies.pop(0)
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.001)  # separate reads on the client's side
                if close:
                    break
            else:
                await reader.read()  # out of replies: hold the connection open until the client closes it
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def run(scenario: Callable[[RawServer, str], Any]) -> Any:
    async def main() -> Any:
        server = RawServer()
        url = await server.start()
        try:
            return await scenario(server, url)
        finally:
            await server.stop()

    return asyncio.run(main())


def _client(url: str, **kwargs: Any) -> UpstreamClient:
    return UpstreamClient(url, limit=kwargs.pop("limit", 4), connect_timeout_s=2, read_timeout_s=kwargs.pop("read_timeout_s", 5), **kwargs)


def test_a_chunked_answer_split_at_every_byte_reads_back_whole_and_the_connection_is_reused() -> None:
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Thing: 1\r\n\r\n" + _chunked(BODY, [5, 1, 9])

    async def scenario(server: RawServer, url: str) -> None:
        for cut in range(1, len(wire)):
            server.reply(wire[:cut], wire[cut:])
        client = _client(url)
        for cut in range(1, len(wire)):
            resp = await client.request("POST", "/v1/chat/completions", b'{"x":1}')
            assert (resp.status, resp.headers["x-thing"]) == (200, "1"), cut
            assert await resp.read() == BODY and resp.at_eof(), cut
            resp.release()
        await client.close()
        assert server.connections == 1  # one keep-alive connection for every answer
        assert server.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
        assert b"Content-Type: application/json\r\n" in server.requests[0] and server.requests[0].endswith(b'{"x":1}')

    run(scenario)


def test_length_close_delimited_interim_and_no_body_answers() -> None:
    async def scenario(server: RawServer, url: str) -> None:
        server.reply(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", b"lo")
        server.reply(b"HTTP/1.1 204 No Content\r\n\r\n")
        server.reply(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil ", b"the end", close=True)
        client = _client(url)
        answers = []
        for _ in range(3):
            resp = await client.request("GET", "/v1/models")
            answers.append((resp.status, await resp.read()))
            resp.release()
        assert answers == [(200, b"hello"), (204, b""), (200, b"until the end")]
        await client.close()

    run(scenario)


def test_readany_gives_each_piece_as_it_arrives() -> None:
    async def scenario(server: RawServer, url: str) -> list[bytes]:
        server.reply(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"3\r\none\r\n", b"3\r\ntwo\r\n", b"0\r\n\r\n")
        client = _client(url)
        resp = await client.request("POST", "/v1/chat/completions", b"{}")
        pieces = []
        while data := await resp.readany():
            pieces.append(data)
        resp.release()
        await client.close()
        return pieces

    assert run(scenario) == [b"one", b"two"]


def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def scenario(server: RawServer, url: str) -> None:
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", close=True)
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        client = _client(url)
        for _ in range(2):
            resp = await client.request("GET", "/v1/models")
            assert await resp.read() == b"ok"
            resp.release()
            await asyncio.sleep(0.05)  # the close reaches the client while the connection idles
        await client.close()
        assert server.connections == 2

    run(scenario)


@pytest.mark.parametrize(
    ("wire", "before_response"),
    [
        (b"", True),  # closed with no answer: the engine may never have read the request
        (b"HTTP/1.1 200 OK\r\nContent-Le", False),  # closed mid-head
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", False),  # closed mid-body
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", False),  # not a chunk size
        (b"SMTP ready\r\n\r\n", False),  # not HTTP
    ],
)
def test_broken_answers_fail_the_call_and_say_whether_it_may_be_sent_again(wire: bytes, before_response: bool) -> None:
    async def scenario(server: RawServer, url: str) -> BaseException:
        server.reply(wire, close=True)
        client = _client(url)
        try:
            resp = await client.request("POST", "/v1/chat/completions", b"{}")
            await resp.read()
        except UpstreamDisconnected as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError("the broken answer was read as a good one")

    exc = run(scenario)
    assert exc.before_response is before_response
    assert undelivered(exc) is before_response
    assert upstream_exception(exc, "http://engine", 5).code == "upstream_disconnected"


def test_no_listener_is_unreachable_and_may_be_sent_again() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused

    async def scenario() -> BaseException:
        client = _client(f"http://127.0.0.1:{port}")
        try:
            await client.request("GET", "/v1/models")
        except UpstreamConnectError as exc:
            return exc
        raise AssertionError("a refused connection went unnoticed")

    exc = asyncio.run(scenario())
    err = upstream_exception(exc, "http://engine", 5)
    assert undelivered(exc) and err.code == "upstream_unreachable" and "refused" in err.message


def test_a_silent_engine_times_out_and_is_not_sent_again() -> None:
    async def scenario(server: RawServer, url: str) -> BaseException:
        server.reply(b"HTTP/1.1 200 OK\r\n")  # the head never ends
        client = _client(url, read_timeout_s=0.2)
        try:
            await client.request("POST", "/v1/chat/completions", b"{}")
        except TimeoutError as exc:
            return exc
        finally:
            await client.close()
        raise AssertionError("no timeout")

    exc = run(scenario)
    assert not isinstance(exc, UpstreamConnectTimeout) and not undelivered(exc)
    assert upstream_exception(exc, "http://engine", 0.2).status == 504


def test_connections_are_capped_and_a_cut_answer_frees_its_slot() -> None:
    async def scenario(server: RawServer, url: str) -> None:
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        client = _client(url, limit=1)
        first = await client.request("POST", "/v1/chat/completions", b"{}")
        second = asyncio.create_task(client.request("GET", "/v1/models"))
        await asyncio.sleep(0.05)
        assert not second.done()  # waits for the one slot
        first.close()  # a harness that left mid-answer: the connection is cut, not pooled
        resp = await asyncio.wait_for(second, 2)
        assert await resp.read() == b"ok"
        resp.release()
        first.release()  # a second end of an answer already ended changes nothing
        await client.close()
        assert server.connections == 2

    run(scenario)


def test_a_large_answer_pauses_reading_until_it_is_consumed() -> None:
    big = bytes(range(256)) * (40 << 10)  # 10 MiB, over the pause threshold

    async def scenario(server: RawServer, url: str) -> bytes:
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(big), big)
        client = _client(url)
        resp = await client.request("POST", "/v1/chat/completions", b"x" * (1 << 17))  # a body sent without a copy
        await asyncio.sleep(0.2)  # let the server push what the socket takes
        data = await resp.read()
        resp.release()
        await client.close()
        assert server.requests[0].endswith(b"x" * (1 << 17))
        return data

    assert run(scenario) == big


def test_the_url_path_prefix_and_host_header() -> None:
    async def scenario(server: RawServer, url: str) -> bytes:
        server.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        client = _client(url + "/engine/", headers={"Authorization": "Bearer k"})
        (await client.request("GET", "/v1/models")).release()
        await client.close()
        return server.requests[0]

    request = run(scenario)
    assert request.startswith(b"GET /engine/v1/models HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Authorization: Bearer k\r\n" in request and b"Content-Type" not in request


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(ValueError, match="not an http"):
        asyncio.run(_make("ftp://engine"))


async def _make(url: str) -> UpstreamClient:
    return _client(url)
