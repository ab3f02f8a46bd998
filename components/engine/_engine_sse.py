"""How a generation goes back to the client: collected whole, or one SSE event per step then ``[DONE]``."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator

import orjson
from aiohttp import web

from components.engine._generation import Step
from components.engine._protocol import ApiError
from components.engine._responses import ChatStream, CompletionStream


async def collect(steps: AsyncIterator[Step]) -> list[Step]:
    async with aclosing(steps):
        return [step async for step in steps]


async def chat_chunks(stream: ChatStream, steps: AsyncIterator[Step]) -> AsyncIterator[dict[str, Any]]:
    yield stream.first()
    async with aclosing(steps):
        async for step in steps:
            if (chunk := stream.step(step)) is not None:
                yield chunk
    if (last := stream.last()) is not None:
        yield last


async def completion_chunks(stream: CompletionStream, steps: AsyncIterator[Step]) -> AsyncIterator[dict[str, Any]]:
    async with aclosing(steps):
        async for step in steps:
            yield stream.step(step)
    if (last := stream.last()) is not None:
        yield last


async def send_events(
    request: web.Request, chunks: AsyncIterator[dict[str, Any]], extra_headers: dict[str, str]
) -> web.StreamResponse:
    """Write each chunk as one SSE event the moment it exists, then ``[DONE]``."""
    headers = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", **extra_headers}
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    async with aclosing(chunks):
        try:
            async for chunk in chunks:
                await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        except (ConnectionResetError, ConnectionError):
            return response  # the client left; closing `chunks` cancels the generation
        except Exception as exc:  # headers are sent: report in-stream, as vLLM does
            error = exc if isinstance(exc, ApiError) else ApiError(f"generation failed: {exc}", status=500)
            await response.write(b"data: " + orjson.dumps(error.body()) + b"\n\n")
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response
