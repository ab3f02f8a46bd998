"""A lean HTTP/1.1 client for the one engine the proxy talks to.

The proxy sends every call to one host, over keep-alive connections, with the same few
headers; aiohttp's general client (cookies, redirects, proxies, tracing, multidicts, a
URL object per request) cost about a fifth of the proxy's CPU per call, and the added
latency at one client is mostly that CPU (docs/benchmarks.md). This client does only
what the proxy needs: a pool of connections to one origin (http or https), a request
written in one send, the response read as it arrives (Content-Length, chunked, or to
the close), and failures told apart the way the retry rule needs (``errors.undelivered``):
no connection, a connection that closed before any answer, or an answer cut short.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from urllib.parse import urlsplit

_PAUSE_AT = 4 << 20  # buffered answer bytes at which reading pauses until the proxy catches up
_MAX_HEAD = 64 << 10  # an answer's status line and headers; more is not an engine talking


class UpstreamConnectError(ConnectionError):
    """No connection could be opened (refused, unreachable, no such host)."""

    def __init__(self, os_error: OSError) -> None:
        super().__init__(str(os_error))
        self.os_error = os_error


class UpstreamConnectTimeout(TimeoutError):
    """Opening a connection took longer than the connect timeout."""


class UpstreamTLSError(ConnectionError):
    """The TLS handshake failed (a certificate, a protocol mismatch): retrying does not help."""


class UpstreamDisconnected(ConnectionError):
    """The connection closed, or sent something that is not HTTP, before the answer ended.

    ``before_response`` is True when not a byte of the answer had arrived: the engine may
    never have read the request (a pooled connection it had closed while idle).
    """

    def __init__(self, message: str, *, before_response: bool) -> None:
        super().__init__(message)
        self.before_response = before_response


class Response:
    """One answer: status and headers at once, the body as it arrives (``readany``) or whole (``read``).

    Call ``release`` once done (the connection goes back to the pool if the body was read
    to its end) or ``close`` to cut it; both are idempotent.
    """

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers  # names lower-cased
        self._conn = conn
        self._exchange = conn.exchanges  # a pooled connection carries later answers: this one's end is its own

    async def readany(self) -> bytes:
        """What arrived since the last read (waiting for some), or ``b""`` at the end of the body."""
        return await self._conn.read_body()

    async def read(self) -> bytes:
        parts = []
        while data := await self._conn.read_body():
            parts.append(data)
        return b"".join(parts)

    def at_eof(self) -> bool:
        return self._conn.body_done and not self._conn.body

    def release(self) -> None:
        if self._conn.exchanges == self._exchange:
            self._conn.finish(reuse=self.at_eof())

    def close(self) -> None:
        if self._conn.exchanges == self._exchange:
            self._conn.finish(reuse=False)


class UpstreamClient:
    """Connections to one origin, at most ``limit`` at once; create it inside the running loop."""

    def __init__(
        self,
        base_url: str,
        *,
        limit: int,
        connect_timeout_s: float,
        read_timeout_s: float,
        headers: dict[str, str] | None = None,
        keepalive_s: float = 30.0,
        unix_socket: str | None = None,
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"upstream {base_url!r} is not an http:// or https:// URL")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if url.scheme == "https" else None
        self._prefix = url.path.rstrip("/")
        # A sandboxed pod's only way out (pipelines/executor/_channel.py): the URL still
        # names the origin (Host header, path prefix), the bytes go through the socket.
        self._unix_socket = unix_socket
        host = f"[{self._host}]" if ":" in self._host else self._host
        default_port = url.port is None or url.port == (443 if url.scheme == "https" else 80)
        fixed = {"Host": host if default_port else f"{host}:{self._port}", **(headers or {})}
        self._fixed_head = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._keepalive_s = keepalive_s
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[tuple[_Connection, float]] = []
        self._closed = False

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None,
        *, read_timeout_s: float | None = None,
    ) -> Response:  # fmt: skip
        """Send one request; the status and headers have arrived when this returns."""
        if self._closed:
            raise RuntimeError("the upstream client is closed")
        await self._slots.acquire()
        conn = None
        try:
            conn = self._pooled() or await self._connect()
            extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items()) if headers else ""
            if body:  # every body the proxy sends is JSON
                extra += "Content-Type: application/json\r\n"
            head = f"{method} {self._prefix}{path} HTTP/1.1\r\n{self._fixed_head}{extra}Content-Length: {len(body)}\r\n\r\n"
            return await conn.exchange(head.encode("latin-1"), body, read_timeout_s or self._read_timeout_s)
        except BaseException:
            if conn is not None:
                conn.finish(reuse=False)
            else:
                self._slots.release()
            raise

    async def close(self) -> None:
        self._closed = True
        for conn, _ in self._idle:
            conn.close_transport()
        self._idle.clear()

    def _pooled(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn, since = self._idle.pop()
            if not conn.lost and now - since < self._keepalive_s:
                return conn
            conn.close_transport()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                if self._unix_socket is not None:
                    _, conn = await loop.create_unix_connection(lambda: _Connection(self), self._unix_socket)
                    return conn
                _, conn = await loop.create_connection(
                    lambda: _Connection(self), self._host, self._port, ssl=self._ssl,
                    server_hostname=self._host if self._ssl else None,
                )  # fmt: skip
        except TimeoutError:
            raise UpstreamConnectTimeout(f"no connection within {self._connect_timeout_s:g}s") from None
        except ssl.SSLError as exc:
            raise UpstreamTLSError(f"TLS handshake failed: {exc}") from exc
        except OSError as exc:
            raise UpstreamConnectError(exc) from exc
        return conn

    def _done_with(self, conn: _Connection, reuse: bool) -> None:
        self._slots.release()
        if reuse and not self._closed and not conn.lost:
            self._idle.append((conn, time.monotonic()))
        else:
            conn.close_transport()


class _Connection(asyncio.Protocol):
    """One keep-alive connection: parses each answer's head, then de-chunks its body into a queue."""

    def __init__(self, client: UpstreamClient) -> None:
        self._client = client
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.lost = False
        self.exchanges = 0
        self._reset()

    def _reset(self) -> None:
        self._head = bytearray()
        self._in_body = False
        self._head_waiter: asyncio.Future[Response] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._keep_alive = False
        self._remaining = -1  # body bytes left (Content-Length), -1 for chunked or to-the-close
        self._chunked = False
        self._chunk_left = 0  # in a chunked body: data bytes left in this chunk, -1 while reading its size line
        self._pending = b""  # a chunked body's bytes not yet parsed (a split size line)
        self.body: deque[bytes] = deque()
        self._buffered = 0
        self.body_done = False
        self._finished = False
        self._paused = False
        self._read_timeout_s = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._last_data = 0.0

    # Protocol callbacks.
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._in_body and self._remaining < 0 and not self._chunked and not self.body_done:
            self._end_body()  # an answer without a length ends with its connection
        elif not self.body_done and self._head_waiter is not None:
            reason = f": {exc}" if exc else ""
            self._fail(UpstreamDisconnected(f"the connection closed{reason}", before_response=not self._in_body and not self._head))

    def data_received(self, data: bytes) -> None:
        if self._head_waiter is None or self.body_done:
            return  # nothing asked for: an idle connection's stray bytes are dropped with it
        self._last_data = self._loop.time()  # type: ignore[union-attr]
        try:
            if not self._in_body:
                data = self._read_head(data)
            if self._in_body and data:
                self._read_body(data)
        except _BadAnswer as exc:
            self._fail(UpstreamDisconnected(f"the answer is not valid HTTP/1.1 ({exc})", before_response=False))
            self.close_transport()

    # The client's side.
    async def exchange(self, head: bytes, body: bytes, read_timeout_s: float) -> Response:
        self._reset()
        self.exchanges += 1
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._read_timeout_s = read_timeout_s
        self._head_waiter = loop.create_future()
        # One timer per answer, not one per wait: it fires only if the engine has been
        # silent for the whole read timeout, and re-arms itself otherwise.
        self._last_data = loop.time()
        self._timer = loop.call_at(self._last_data + read_timeout_s, self._check_silence)
        assert self._transport is not None
        if len(body) < 1 << 16:
            self._transport.write(head + body)
        else:  # no copy of a large body (images)
            self._transport.writelines((head, body))
        return await self._head_waiter

    async def read_body(self) -> bytes:
        while not self.body:
            if self._error is not None:
                raise self._error
            if self.body_done:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = self.body.popleft() if len(self.body) == 1 else b"".join(self.body)
        self.body.clear()
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data

    def finish(self, *, reuse: bool) -> None:
        if self._finished:
            return
        self._finished = True
        if self._timer is not None:
            self._timer.cancel()
        self._client._done_with(self, reuse and self._keep_alive and self.body_done and self._error is None)

    def close_transport(self) -> None:
        self.lost = True
        if self._transport is not None:
            self._transport.close()

    def _check_silence(self) -> None:
        self._timer = None
        if self.body_done or self._error is not None or self._finished:
            return
        assert self._loop is not None
        due = self._last_data + self._read_timeout_s
        if self._paused or self._loop.time() < due:  # paused: the proxy is the slow one, not the engine
            self._timer = self._loop.call_at(max(due, self._loop.time() + 0.1), self._check_silence)
            return
        self._fail(TimeoutError(f"no answer bytes for {self._read_timeout_s:g}s"))
        self.close_transport()

    # Parsing.
    def _read_head(self, data: bytes) -> bytes:
        self._head += data
        end = self._head.find(b"\r\n\r\n")
        if end < 0:
            if len(self._head) > _MAX_HEAD:
                raise _BadAnswer(f"no end of headers in {_MAX_HEAD} bytes")
            return b""
        lines = bytes(self._head[:end]).decode("latin-1").split("\r\n")
        rest = bytes(self._head[end + 4 :])
        version, status = _status_line(lines[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadAnswer(f"header line {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        if 100 <= status < 200:  # an interim answer: the real one follows
            self._head = bytearray()
            return self._read_head(rest) if rest else b""
        connection = headers.get("connection", "").lower()
        self._keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if self._chunked:
            self._chunk_left = -1
        elif "content-length" in headers:
            try:
                self._remaining = int(headers["content-length"])
            except ValueError:
                raise _BadAnswer(f"Content-Length {headers['content-length']!r}") from None
        elif status in (204, 304):
            self._remaining = 0
        else:
            self._keep_alive = False  # the body ends when the connection does
        self._in_body = True
        waiter = self._head_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Response(self, status, headers))
        if self._remaining == 0:
            self._end_body()
        return rest

    def _read_body(self, data: bytes) -> None:
        if self._chunked:
            self._dechunk(data)
        elif self._remaining >= 0:
            if len(data) > self._remaining:
                raise _BadAnswer("more body bytes than Content-Length")
            self._remaining -= len(data)
            self._push(data)
            if self._remaining == 0:
                self._end_body()
        else:
            self._push(data)

    def _dechunk(self, data: bytes) -> None:
        data = self._pending + data if self._pending else data
        self._pending = b""
        pos, size = 0, len(data)
        while pos < size and not self.body_done:
            if self._chunk_left > 0:  # inside a chunk's data
                take = min(self._chunk_left, size - pos)
                self._push(data[pos : pos + take])
                pos += take
                self._chunk_left -= take
                if self._chunk_left == 0:
                    self._chunk_left = -2  # its CRLF comes next
                continue
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                if size - pos > 1024:
                    raise _BadAnswer("a chunk size line over 1 KB")
                self._pending = data[pos:]
                return
            line = data[pos:eol]
            pos = eol + 2
            if self._chunk_left == -2:  # the CRLF after a chunk's data
                if line:
                    raise _BadAnswer("no CRLF after a chunk")
                self._chunk_left = -1
            elif self._chunk_left == -3:  # trailers, ended by an empty line
                if not line:
                    self._end_body()
            else:
                try:
                    self._chunk_left = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    raise _BadAnswer(f"chunk size {line[:40]!r}") from None
                if self._chunk_left == 0:
                    self._chunk_left = -3
        if pos < size:
            raise _BadAnswer("bytes after the end of the body")

    def _push(self, data: bytes) -> None:
        if not data:
            return
        self.body.append(data)
        self._buffered += len(data)
        if self._buffered > _PAUSE_AT and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def _end_body(self) -> None:
        self.body_done = True
        self._wake()

    def _fail(self, exc: BaseException) -> None:
        if self._error is not None:
            return  # the first failure is the cause; closing the connection after it is not news
        self._error = exc
        waiter = self._head_waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class _BadAnswer(Exception):
    pass


def _status_line(line: str) -> tuple[str, int]:
    version, _, rest = line.partition(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0") or len(rest) < 3 or not rest[:3].isdigit():
        raise _BadAnswer(f"status line {line[:80]!r}")
    return version, int(rest[:3])
