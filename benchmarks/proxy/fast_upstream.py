"""An OpenAI chat-completions upstream that answers at once, shaped like vLLM's.

It stands in for the inference engine so that a benchmark measures only what sits
between the client and the engine. Every answer is serialised once at start-up: the
server's own cost per call is parsing the request body and writing bytes.

The shape follows vLLM with ``return_token_ids`` and ``logprobs`` set (the fields the
recording proxy asks for): ``prompt_token_ids`` at the root (first chunk when
streaming), ``token_ids`` on each choice, ``logprobs.content`` per token, and a usage
chunk before ``[DONE]`` when ``stream_options.include_usage`` is set.

Run: ``python -m benchmarks.proxy.fast_upstream --port P``.
"""

from __future__ import annotations

import argparse
import asyncio

import orjson
from aiohttp import web

MODEL = "bench-model"
_WORDS = ["The", " answer", " is", " forty", "-two", ",", " as", " computed", " by", " the", " proxy", "."]


def _token_text(i: int) -> str:
    return _WORDS[i % len(_WORDS)]


def _token_logprob(i: int) -> dict:
    return {"token": _token_text(i), "logprob": -0.5 - 0.01 * i, "bytes": list(_token_text(i).encode()), "top_logprobs": []}


def _usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def full_body(prompt_tokens: int, completion_tokens: int) -> bytes:
    """The non-streamed answer: one choice with its token ids and logprobs."""
    ids = list(range(1000, 1000 + completion_tokens))
    return orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(map(_token_text, range(completion_tokens)))},
                    "logprobs": {"content": [_token_logprob(i) for i in range(completion_tokens)]},
                    "finish_reason": "stop",
                    "stop_reason": None,
                    "token_ids": ids,
                }
            ],
            "usage": _usage(prompt_tokens, completion_tokens),
            "prompt_token_ids": list(range(100, 100 + prompt_tokens)),
        }
    )


def stream_events(prompt_tokens: int, completion_tokens: int) -> tuple[bytes, bytes]:
    """The streamed answer as (events before usage, usage event + [DONE]).

    Events: a role chunk carrying ``prompt_token_ids``, one chunk per token, a chunk
    with the finish reason. The usage tail is sent only when the client asks for it.
    """

    def event(choices: list[dict], **extra: object) -> bytes:
        chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": MODEL}
        chunk.update(choices=choices, **extra)
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    head = [event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}],
                  prompt_token_ids=list(range(100, 100 + prompt_tokens)))]
    for i in range(completion_tokens):
        head.append(
            event([{"index": 0, "delta": {"content": _token_text(i)}, "logprobs": {"content": [_token_logprob(i)]},
                    "finish_reason": None, "token_ids": [1000 + i]}])
        )
    head.append(event([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop", "stop_reason": None,
                        "token_ids": []}]))
    tail = event([], usage=_usage(prompt_tokens, completion_tokens)) + b"data: [DONE]\n\n"
    return b"".join(head), tail


def build_app(prompt_tokens: int = 128, completion_tokens: int = 8) -> web.Application:
    """The upstream as an aiohttp application (tests run it in-process)."""
    body = full_body(prompt_tokens, completion_tokens)
    head, tail = stream_events(prompt_tokens, completion_tokens)

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            payload = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return web.json_response({"error": {"message": "body is not JSON", "type": "BadRequestError"}}, status=400)
        if not payload.get("stream"):
            return web.Response(body=body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        await resp.write(head)
        if (payload.get("stream_options") or {}).get("include_usage"):
            await resp.write(tail)
        else:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--completion-tokens", type=int, default=8)
    args = parser.parse_args()
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    web.run_app(build_app(args.prompt_tokens, args.completion_tokens), host=args.host, port=args.port,
                access_log=None, print=None)


if __name__ == "__main__":
    main()
