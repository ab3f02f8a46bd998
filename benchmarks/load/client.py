"""Agent sessions against a recording proxy for a fixed time: the load of ``bench_load.py``.

Each session is one rollout (``/s/<session>/v1/chat/completions``) that loops over
multi-turn episodes: the history grows by the user turn and the answer at every call, up
to ``--turns`` calls, then starts over, as an agent starts its next task. Calls alternate
between streamed and plain. Every request carries a unique marker (``[<session>-<n>]``
at the start of its last message), so each call a client saw complete can be looked up on
disk afterwards. Runs as its own process, so its CPU is not the proxy's.

Run: ``python -m benchmarks.load.client --base URL --sessions 256 --duration-s 600 --result FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from benchmarks.proxy.stats import percentile

SYSTEM = {"role": "system", "content": "You are a careful coding agent. Use the tools you are given; answer briefly."}
TOOL_OUTPUT = "tests/test_cli.py::test_help PASSED\ntests/test_cli.py::test_run FAILED (exit 2)\n" * 4
MARKER = re.compile(r"^\[([A-Za-z0-9_-]+-\d+)\]")  # bench_load.py finds each call's marker with this
_DONE = b"data: [DONE]\n\n"


def session_id(index: int) -> str:
    return f"load-{index:03d}"


def marker_of_request(request: dict) -> str | None:
    """The marker of a recorded request (its last message's content), or None."""
    messages = request.get("messages") or [{}]
    content = messages[-1].get("content") if isinstance(messages[-1], dict) else None
    match = MARKER.match(content) if isinstance(content, str) else None
    return match.group(1) if match else None


@dataclass
class Tally:
    calls: int = 0
    streamed: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    completed: dict[str, list[int]] = field(default_factory=dict)  # session -> call numbers seen complete

    def fail(self, why: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(why)


async def _session(http, base: str, index: int, turns: int, deadline: float, tally: Tally) -> None:
    sid = session_id(index)
    url = f"{base}/s/{sid}/v1/chat/completions"
    done = tally.completed.setdefault(sid, [])
    history: list[dict] = []
    n = 0
    while time.perf_counter() < deadline:
        if len(history) >= 2 * (turns - 1):
            history = []  # the episode is over; the next starts from its task prompt
        user = {"role": "user", "content": f"[{sid}-{n}] step {len(history) // 2}: {TOOL_OUTPUT}"}
        stream = (index + n) % 2 == 0
        body = {"model": "bench-model", "messages": [SYSTEM, *history, user], "max_tokens": 8, "stream": stream}
        tally.calls += 1
        tally.streamed += stream
        t0 = time.perf_counter()
        try:
            async with http.post(url, data=orjson.dumps(body), headers={"Content-Type": "application/json"}) as resp:
                data = await resp.read()
                status = resp.status
        except Exception as exc:  # noqa: BLE001 - every failure is counted, the session goes on
            tally.fail(f"call {sid}-{n}: {type(exc).__name__}: {exc}")
            history, n = [], n + 1
            continue
        elapsed_ms = (time.perf_counter() - t0) * 1000
        answer = _answer(data, stream) if status == 200 else None
        if answer is None:
            tally.fail(f"call {sid}-{n}: HTTP {status}, body ends {data[-120:]!r}")
            history, n = [], n + 1
            continue
        tally.latency_ms.append(elapsed_ms)
        done.append(n)
        history += [user, {"role": "assistant", "content": answer}]
        n += 1


def _answer(data: bytes, stream: bool) -> str | None:
    """The answer's text when the call completed (a stream up to [DONE]), else None."""
    if stream:
        return "(streamed answer)" if data.endswith(_DONE) else None
    try:
        return orjson.loads(data)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        return None


async def run(base: str, sessions: int, duration_s: float, turns: int) -> dict:
    import aiohttp

    tally = Tally()
    connector = aiohttp.TCPConnector(limit=sessions)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:
        t0 = time.perf_counter()
        deadline = t0 + duration_s
        await asyncio.gather(*(_session(http, base, i, turns, deadline, tally) for i in range(sessions)))
        wall_s = time.perf_counter() - t0
    lat = tally.latency_ms
    return {
        "sessions": sessions, "turns": turns, "duration_s": duration_s, "wall_s": wall_s, "calls": tally.calls,
        "ok": len(lat), "streamed": tally.streamed, "errors": tally.errors, "error_samples": tally.error_samples,
        "p50_ms": percentile(lat, 50) if lat else None, "p99_ms": percentile(lat, 99) if lat else None,
        "completed": tally.completed,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the proxy's root, e.g. http://127.0.0.1:8100")
    parser.add_argument("--sessions", type=int, default=256)
    parser.add_argument("--duration-s", type=float, default=600.0)
    parser.add_argument("--turns", type=int, default=8, help="calls per episode before the history resets")
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args()
    import uvloop

    result = uvloop.run(run(args.base, args.sessions, args.duration_s, args.turns))
    args.result.write_bytes(orjson.dumps(result))


if __name__ == "__main__":
    main()
